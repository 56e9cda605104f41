import FuzzSupport

runFuzzer(fuzzBundleEvents)
