import FuzzSupport

runFuzzer(fuzzCursor)
