import Foundation

#if canImport(Darwin)
import Darwin
#endif

/// What a sign-in tells the server about the device (`Gatehouse-Device`, docs/console.md): the hardware model
/// identifier (`iPhone15,2`, `Mac14,2`), which any app may read without an entitlement, unlike the name the user gave
/// the device (`UIDevice.name` answers only "iPhone" since iOS 16 without one). The operator console shows it beside
/// the session; the server never decides on it. Nil where there is no such identifier (Linux).
enum DeviceModel {
    /// This device's model identifier, read once; nil when the platform has none or it is not a header value the server
    /// takes (1 to 64 printable ASCII characters).
    static let identifier: String? = {
        #if os(iOS)
        // The simulator reports the Mac's architecture as `hw.machine`; the model it simulates is in its environment.
        let found = ProcessInfo.processInfo.environment["SIMULATOR_MODEL_IDENTIFIER"] ?? sysctlString("hw.machine")
        #elseif os(macOS)
        let found = sysctlString("hw.model")
        #else
        let found: String? = nil
        #endif
        guard let found, (1...64).contains(found.utf8.count), found.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        return found
    }()

    #if canImport(Darwin)
    /// A string value of `sysctlbyname`, nil when it has none.
    private static func sysctlString(_ name: String) -> String? {
        var size = 0
        guard sysctlbyname(name, nil, &size, nil, 0) == 0, size > 1, size <= 256 else { return nil }
        var bytes = [CChar](repeating: 0, count: size)
        guard sysctlbyname(name, &bytes, &size, nil, 0) == 0 else { return nil }
        return String(cString: bytes)
    }
    #endif
}
