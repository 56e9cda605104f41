import FuzzSupport

runFuzzer(fuzzReplayRecords)
