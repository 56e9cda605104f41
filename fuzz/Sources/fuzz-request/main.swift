import Foundation
import FuzzerDriver

// libFuzzer runs the process through LLVMFuzzerRunDriver: SwiftPM links every executable through its
// own (renamed) main, so libFuzzer's main is never used.
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
    var empty: UInt8 = 0
    return data.map { fuzzRequest($0, size) } ?? fuzzRequest(&empty, 0)
})
