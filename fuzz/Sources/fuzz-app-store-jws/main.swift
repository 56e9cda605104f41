import FuzzSupport

runFuzzer(fuzzAppStoreJWS)
