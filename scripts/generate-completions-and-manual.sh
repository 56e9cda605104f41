#!/usr/bin/env bash
# Regenerates completions/policy.{bash,zsh,fish} and docs/man/policy.1 with swift-argument-parser's own tools:
# `policy --generate-completion-script SHELL` and its generate-manual plugin. Run after changing a command or
# option; CompletionAndManualTests fails while the committed files disagree with the tool.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product policy
bin="$(swift build --show-bin-path)/policy"
mkdir -p completions docs/man
for shell in bash zsh fish; do "$bin" --generate-completion-script "$shell" > "completions/policy.$shell"; done
swift package plugin --allow-writing-to-package-directory generate-manual
cp .build/plugins/GenerateManual/outputs/policy/policy.1 docs/man/policy.1
echo "wrote completions/policy.{bash,zsh,fish} and docs/man/policy.1"
