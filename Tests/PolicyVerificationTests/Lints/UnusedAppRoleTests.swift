import Foundation
import Testing
@testable import PolicyVerification

@Suite struct UnusedAppRoleTests {
    static let set = """
        appRoles:
          customer: {name: Customer}
          admin: {name: Admin}
          driver: {name: Driver}
        resources:
          shop:
            actions:
              checkout: {appRoles: [customer]}
              refund: {signIn: true}
        rules:
          - name: admins-refund
            effect: allow
            resources: [shop]
            actions: [refund]
            when: RULE
        """

    @Test func aRoleNeitherRequiredNorTestedIsFound() {
        let found = findings(UnusedAppRole.self, Self.set.replacingOccurrences(of: "RULE", with: #"'"admin" in subject.roles'"#))
        #expect(found.map(\.role.value) == ["driver"])
        #expect(found.map(\.rendered) == ["4:3: app role 'driver' is declared but no action or condition needs it"])
    }

    @Test func aConditionReadingRolesWithoutALiteralSilencesIt() {
        let found = findings(UnusedAppRole.self, Self.set.replacingOccurrences(of: "RULE", with: "size(subject.roles) > 2"))
        #expect(found.isEmpty)
    }
}
