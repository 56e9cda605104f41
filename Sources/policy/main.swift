import PolicyCLI

PolicyCommand.main()
