import FuzzSupport

runFuzzer(fuzzYAMLSafety)
