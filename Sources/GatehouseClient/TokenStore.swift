internal import Foundation
public import PolicyModel
import Synchronization

/// Where `GatehouseClient` keeps the session's token pair between launches.
///
/// Calls are synchronous and short (a Keychain read or write); the client calls them on its own executor.
public protocol TokenStore: Sendable {
    /// The stored pair, nil when there is none.
    func load() throws -> TokenPair?
    /// Replaces the stored pair.
    func save(_ tokens: TokenPair) throws
    /// Forgets the stored pair.
    func clear() throws
}

/// A token store in memory: for tests, previews and command-line tools; the session ends with the process.
public final class InMemoryTokenStore: TokenStore, CustomStringConvertible, CustomReflectable {
    private let stored: Mutex<TokenPair?>

    /// A store holding `tokens` (none by default).
    public init(_ tokens: TokenPair? = nil) { stored = Mutex(tokens) }

    public func load() -> TokenPair? { stored.withLock { $0 } }
    public func save(_ tokens: TokenPair) { stored.withLock { $0 = tokens } }
    public func clear() { stored.withLock { $0 = nil } }

    /// Whether a pair is held; never the tokens.
    public var description: String { "InMemoryTokenStore(\(load() == nil ? "empty" : "holding a session"))" }

    /// The held pair as its own mirror shows it (tokens redacted), not the lock around it.
    public var customMirror: Mirror { Mirror(self, children: ["tokens": load() as Any], displayStyle: .class) }
}

/// A Keychain operation that did not succeed, with its `OSStatus`.
public struct TokenStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `OSStatus` the Keychain returned.
    public var status: Int32
    public var description: String { "Keychain error \(status)" }
}

#if canImport(Security)
import Security

/// The token pair in the Keychain: one generic-password item (JSON), readable after the first unlock and never
/// restored to another device (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`), so a background refresh works
/// while the phone is locked and a backup carries no session.
public struct KeychainTokenStore: TokenStore, CustomStringConvertible {
    /// The item's `kSecAttrService`.
    public let service: String
    /// The item's `kSecAttrAccount`.
    public let account: String

    /// A store for one item; give each server (or app group) its own `service`.
    public init(service: String = "gatehouse.session", account: String = "default") {
        self.service = service
        self.account = account
    }

    private var item: [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account,
            // The iOS-style keychain on macOS too (ignored on iOS, where it is the only one).
            kSecUseDataProtectionKeychain as String: true,
        ]
    }

    public func load() throws -> TokenPair? {
        var query = item
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = result as? Data else { throw TokenStoreError(status: status) }
        return try JSONDecoder().decode(TokenPair.self, from: data)
    }

    public func save(_ tokens: TokenPair) throws {
        let data = try JSONEncoder().encode(tokens)
        let attributes: [String: Any] = [
            kSecValueData as String: data, kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        var status = SecItemUpdate(item as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(item.merging(attributes) { _, new in new } as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw TokenStoreError(status: status) }
    }

    public func clear() throws {
        let status = SecItemDelete(item as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw TokenStoreError(status: status) }
    }

    public var description: String { "KeychainTokenStore(service: \(service), account: \(account))" }
}
#endif
