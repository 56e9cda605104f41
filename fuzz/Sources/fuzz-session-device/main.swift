import FuzzSupport

runFuzzer(fuzzSessionDevice)
