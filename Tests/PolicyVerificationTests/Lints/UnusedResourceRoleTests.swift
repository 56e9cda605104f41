import Testing
@testable import PolicyVerification

@Suite struct UnusedResourceRoleTests {
    @Test func aRoleGrantingNothingIsFoundUnlessTestedOrOpenToMembers() {
        let found = findings(UnusedResourceRole.self, """
            resources:
              doc:
                owner: ownerId
                roles:
                  reader: {}
                  editor: {grants: [edit]}
                  auditor: {}
                actions:
                  edit: {}
                  read: {}
              board:
                owner: ownerId
                memberActions: [view]
                roles:
                  guest: {}
                actions:
                  view: {}
            rules:
              - name: auditors-read
                effect: allow
                resources: [doc]
                actions: [read]
                when: resource.role == "auditor"
            """)
        #expect(found.map { "\($0.resourceType).\($0.role.value)" } == ["doc.reader"])
        #expect(found.map(\.rendered) == ["5:7: role 'reader' of 'doc' grants no action, so a member holding it can do nothing"])
    }

    @Test func grantsFollowInheritance() {
        let found = findings(UnusedResourceRole.self, """
            resources:
              doc:
                owner: ownerId
                roles:
                  viewer: {grants: [read]}
                  reader: {inherits: [viewer]}
                actions:
                  read: {}
            """)
        #expect(found.isEmpty)
    }
}
