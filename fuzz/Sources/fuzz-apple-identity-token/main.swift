import FuzzSupport

runFuzzer(fuzzAppleIdentityToken)
