import FuzzSupport

runFuzzer(fuzzBundleRoundtrip)
