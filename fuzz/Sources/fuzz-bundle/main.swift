import FuzzSupport

runFuzzer(fuzzBundle)
