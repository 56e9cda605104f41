import FuzzSupport

runFuzzer(fuzzDeviceChallenge)
