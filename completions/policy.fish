function __policy_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __policy_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __policy_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __policy_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __policy_parse_tokens -S
    set -l unparsed_tokens (__policy_tokens -pc)
    switch $unparsed_tokens[1]
    case 'policy'
        __policy_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'check'
            __policy_parse_subcommand -r 1 'format=' 'strict' 'coverage' 'min-coverage=' 'junit-output=' 'public-key=' 'version' 'h/help'
        case 'decide'
            __policy_parse_subcommand 0 'policies=' 'request=' 'jsonl' 'version' 'h/help'
        case 'explain'
            __policy_parse_subcommand 0 'policies=' 'request=' 'format=' 'subject-id=' 'signed-out' 'subject-tier=' 'subscription-expiry=' 'expired' 'app-role=+' 'auth-method=' 'verified-ago=' 'verified-at=' 'subject-attribute=+' 'action=' 'resource-type=' 'resource-id=' 'owner=' 'member-role=' 'usage=+' 'resource-attribute=+' 'context-attribute=+' 'now=' 'version' 'h/help'
        case 'plan'
            __policy_parse_subcommand 0 'policies=' 'format=' 'subject-id=' 'signed-out' 'subject-tier=' 'subscription-expiry=' 'expired' 'app-role=+' 'auth-method=' 'verified-ago=' 'verified-at=' 'subject-attribute=+' 'action=' 'resource-type=' 'resource-id=' 'owner=' 'member-role=' 'usage=+' 'resource-attribute=+' 'context-attribute=+' 'now=' 'version' 'h/help'
        case 'diff'
            __policy_parse_subcommand -r 1 'base=' 'fail-on-widening' 'format=' 'version' 'h/help'
        case 'matrix'
            __policy_parse_subcommand 1 'resource=' 'format=' 'public-key=' 'version' 'h/help'
        case 'serve'
            __policy_parse_subcommand 0 'policies=' 'database=' 'host=' 'port=' 'apple-client-id=+' 'apple-jwks=' 'operator-token-file=' 'bundle-key=' 'strict-reload' 'body-limit=' 'sign-in-limit=' 'trusted-proxy=+' 'read-timeout=' 'request-timeout=' 'decision-log=' 'decision-log-signed-out' 'decision-log-limit=' 'app-store-bundle-id=+' 'app-store-environment=+' 'app-store-root-certificate=+' 'trust-caller-subjects' 'write-limit=' 'source-write-limit=' 'maintenance-interval=' 'retention=' 'ipv6-prefix=' 'max-connections=' 'max-connections-per-client=' 'notification-limit=' 'access-token-lifetime=' 'refresh-grace-period=' 'decision-cache-entries=' 'shadow=' 'console' 'version' 'h/help'
        case 'schema'
            __policy_parse_subcommand 0 'version' 'h/help'
        case 'version'
            __policy_parse_subcommand 0 'format=' 'version' 'h/help'
        case 'keygen'
            __policy_parse_subcommand 0 'out=' 'version' 'h/help'
        case 'bundle'
            __policy_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'build'
                __policy_parse_subcommand 1 'key=' 'o=' 'revision=' 'created=' 'version' 'h/help'
            case 'verify'
                __policy_parse_subcommand 1 'public-key=' 'held-revision=' 'version' 'h/help'
            case 'inspect'
                __policy_parse_subcommand 1 'format=' 'version' 'h/help'
            end
        case 'replay'
            __policy_parse_subcommand 1 'policies=' 'base=' 'format=' 'fail-on=' 'version' 'h/help'
        case 'log'
            __policy_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'pull'
                __policy_parse_subcommand 0 'server=' 'operator-token-file=' 'o/output=' 'from=' 'to=' 'user=' 'action=' 'resource-type=' 'decision=' 'reason=' 'max=' 'version' 'h/help'
            end
        case 'help'
            __policy_parse_subcommand -r 1 'version'
        end
    end
end

function __policy_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __policy_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __policy_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __policy_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__policy_tokens -p)
    if test -z "$(__policy_tokens -t)"
        set -l index (count (__policy_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'policy' -f
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'check' -d 'Load and validate policy sets, lint them, run their tests and prove their invariants.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'decide' -d 'Decide one request (JSON) or a stream of requests (JSON Lines).'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'explain' -d 'Decide one request and print the trace of every check and rule considered, with file:line:col.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'plan' -d 'Which resources of a type a subject may take an action on: always, never, or a condition on the resource.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'diff' -d 'Show which decisions change between two versions of a policy set.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'matrix' -d 'Print the decision table of a policy set: subject classes by actions, per resource type.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'serve' -d 'Serve decisions and sign-in over HTTP, reloading the policy folder as it changes.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'schema' -d 'Print the JSON Schema of a policy file (what schemas/policy.schema.json holds).'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'version' -d 'Print the Gatehouse version, the git commit it was built from and the build date.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'keygen' -d 'Make an Ed25519 key to sign policy bundles with; print its public key.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'bundle' -d 'Build, verify and inspect signed policy bundles (one file an app decides from offline).'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'replay' -d 'Re-decide recorded decisions under a candidate policy set and report whom the change hits.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'log' -d 'Work with a server\'s decision records.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy check" format' -l 'format' -d 'Output format: text, json, github, junit or markdown.' -rfka 'text json github junit markdown'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy check" strict' -l 'strict' -d 'Treat warnings (lints, invariant warnings) as errors: exit 1.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy check" coverage' -l 'coverage' -d 'Report which rules, condition branches and requirement outcomes the policy tests exercise, per file.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy check" min-coverage' -l 'min-coverage' -d 'Exit 2 when a set\'s test coverage is below N percent (0-100); implies --coverage.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy check" junit-output' -l 'junit-output' -d 'Also write the JUnit XML report to FILE, whatever --format is.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy check" public-key' -l 'public-key' -d 'Verify a bundle file\'s signature with this public key (base64, or a file holding it) before reading it.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy check" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy check" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy decide" policies' -l 'policies' -d 'The policy set folder.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy decide" request' -l 'request' -d 'A file holding one request JSON (default: standard input).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy decide" jsonl' -l 'jsonl' -d 'Read JSON Lines from standard input; write one decision per line.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy decide" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy decide" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" policies' -l 'policies' -d 'The policy set folder.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" request' -l 'request' -d 'A file holding one request JSON; - for standard input.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" format' -l 'format' -d 'Output format: text, or json (the contract\'s decision plus a trace array).' -rfka 'text json'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" subject-id' -l 'subject-id' -d 'The subject\'s id (default: user).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" signed-out' -l 'signed-out' -d 'The subject is signed out (no id).'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" subject-tier' -l 'subject-tier' -d 'The subject\'s subscription tier.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" subscription-expiry' -l 'subscription-expiry' -d 'When the subscription lapses (RFC 3339).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" expired' -l 'expired' -d 'The subscription lapsed a day before now.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain"' -l 'app-role' -d 'An app role the subject holds (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" auth-method' -l 'auth-method' -d 'How the subject was verified: anonymous, apple, pin, biometric, password.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" verified-ago' -l 'verified-ago' -d 'Verified that long before now, e.g. 5m or 1h30m (needs --auth-method).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" verified-at' -l 'verified-at' -d 'Verified at this time (RFC 3339; needs --auth-method).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain"' -l 'subject-attribute' -d 'A subject attribute, typed by the set\'s declaration (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" action' -l 'action' -d 'The action.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" resource-type' -l 'resource-type' -d 'The resource type (default: the one type that has --action).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" resource-id' -l 'resource-id' -d 'The resource\'s id.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" owner' -l 'owner' -d 'The resource\'s owner: self (the subject) or a user id.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" member-role' -l 'member-role' -d 'The subject\'s role on the resource, as a member.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain"' -l 'usage' -d 'A usage counter of the resource (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain"' -l 'resource-attribute' -d 'A resource attribute (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain"' -l 'context-attribute' -d 'A context attribute (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" now' -l 'now' -d 'The instant to decide at (RFC 3339; default: the clock).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy explain" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" policies' -l 'policies' -d 'The policy set folder.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" format' -l 'format' -d 'Output format: text, or json (the contract\'s plan object).' -rfka 'text json'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" subject-id' -l 'subject-id' -d 'The subject\'s id (default: user).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" signed-out' -l 'signed-out' -d 'The subject is signed out (no id).'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" subject-tier' -l 'subject-tier' -d 'The subject\'s subscription tier.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" subscription-expiry' -l 'subscription-expiry' -d 'When the subscription lapses (RFC 3339).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" expired' -l 'expired' -d 'The subscription lapsed a day before now.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan"' -l 'app-role' -d 'An app role the subject holds (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" auth-method' -l 'auth-method' -d 'How the subject was verified: anonymous, apple, pin, biometric, password.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" verified-ago' -l 'verified-ago' -d 'Verified that long before now, e.g. 5m or 1h30m (needs --auth-method).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" verified-at' -l 'verified-at' -d 'Verified at this time (RFC 3339; needs --auth-method).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan"' -l 'subject-attribute' -d 'A subject attribute, typed by the set\'s declaration (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" action' -l 'action' -d 'The action.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" resource-type' -l 'resource-type' -d 'The resource type (default: the one type that has --action).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" resource-id' -l 'resource-id' -d 'The resource\'s id.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" owner' -l 'owner' -d 'The resource\'s owner: self (the subject) or a user id.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" member-role' -l 'member-role' -d 'The subject\'s role on the resource, as a member.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan"' -l 'usage' -d 'A usage counter of the resource (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan"' -l 'resource-attribute' -d 'A resource attribute (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan"' -l 'context-attribute' -d 'A context attribute (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" now' -l 'now' -d 'The instant to decide at (RFC 3339; default: the clock).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy plan" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy diff" base' -l 'base' -d 'Compare the folder in the working tree with the same folder at this git revision (read with git, no checkout).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy diff" fail-on-widening' -l 'fail-on-widening' -d 'Exit 2 when any request that was denied becomes allowed.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy diff" format' -l 'format' -d 'Output format: text, json or markdown (a pull-request comment).' -rfka 'text json github markdown'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy diff" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy diff" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy matrix" resource' -l 'resource' -d 'Only this resource type.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy matrix" format' -l 'format' -d 'Output format: text, markdown, html or json.' -rfka 'text markdown html json'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy matrix" public-key' -l 'public-key' -d 'Verify a bundle file\'s signature with this public key (base64, or a file holding it) before reading it.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy matrix" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy matrix" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" policies' -l 'policies' -d 'The policy set folder (watched for changes).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" database' -l 'database' -d 'The identity database: a SQLite file (created if missing) or postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (also postgresql://; options ?sslmode=disable|prefer|require&max_connections=N&schema=NAME).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" host' -l 'host' -d 'Address to bind (default 127.0.0.1).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" port' -l 'port' -d 'Port to bind (default 8080; 0 picks a free one).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve"' -l 'apple-client-id' -d 'A Sign in with Apple client id (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" apple-jwks' -l 'apple-jwks' -d 'Apple\'s JWKS: a file or a URL (default Apple\'s).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" operator-token-file' -l 'operator-token-file' -d 'A file holding the operator credential (16+ characters).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" bundle-key' -l 'bundle-key' -d 'Sign and serve the active version\'s bundle at /v1/bundle with this key (policy keygen).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" strict-reload' -l 'strict-reload' -d 'Refuse reloads whose policy tests fail, not only ones that do not load.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" body-limit' -l 'body-limit' -d 'Largest request body in bytes (default 1 MiB).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" sign-in-limit' -l 'sign-in-limit' -d 'Sign-in, PIN and device requests per client address per window (default 10/60).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve"' -l 'trusted-proxy' -d 'A load balancer\'s IP address whose X-Forwarded-For names the client (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" read-timeout' -l 'read-timeout' -d 'Seconds to read a whole request, header and body, from its first byte (default 10).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" request-timeout' -l 'request-timeout' -d 'Seconds to answer a request once read; past it the answer is 503 storage_unavailable (default 15).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" decision-log' -l 'decision-log' -d 'Which decisions to record with their inputs: off (default), denied, all, or sample:R (a fraction R of all). Written in batches off the answer\'s path; rows expire with the logs\' retention.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" decision-log-signed-out' -l 'decision-log-signed-out' -d 'Also record decisions made for no live session (no bearer, no subject id); off by default, as anyone can make them.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" decision-log-limit' -l 'decision-log-limit' -d 'Decision records per account and per client address per window; past it records are dropped and counted (default 600/60).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve"' -l 'app-store-bundle-id' -d 'An app\'s bundle id whose App Store purchases change tiers (repeatable; purchases are off without one).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve"' -l 'app-store-environment' -d 'An App Store environment accepted (repeatable; default Production only).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve"' -l 'app-store-root-certificate' -d 'A DER or PEM root certificate trusted besides Apple Root CA - G3 (repeatable).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" trust-caller-subjects' -l 'trust-caller-subjects' -d 'Decide for the subject a request names when it has no bearer (a backend that authenticated its user itself).'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" write-limit' -l 'write-limit' -d 'Writes per account per window (default 30/60).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" source-write-limit' -l 'source-write-limit' -d 'Writes per client address per window, whatever the accounts (default 120/60).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" maintenance-interval' -l 'maintenance-interval' -d 'Seconds between maintenance runs: expired rows purged, old logs expired (default 3600).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" retention' -l 'retention' -d 'Days audit and decision logs are kept (default 365, at least 30).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" ipv6-prefix' -l 'ipv6-prefix' -d 'IPv6 prefix length that keys per-client limits (default 64).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" max-connections' -l 'max-connections' -d 'Connections open at once; more are closed at once (default half the open-file limit, at most 10000).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" max-connections-per-client' -l 'max-connections-per-client' -d 'Connections one client (an IPv4 address, an IPv6 /64) may hold open; more are closed at once (default 64).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" notification-limit' -l 'notification-limit' -d 'App Store notifications per client, REQUESTS/SECONDS, before any verification (default 600/60).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" access-token-lifetime' -l 'access-token-lifetime' -d 'Seconds an access token works before the client must refresh it (default 900).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" refresh-grace-period' -l 'refresh-grace-period' -d 'Seconds a rotated refresh token may be presented again by a racing client; other reuse ends the session (default 10).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" decision-cache-entries' -l 'decision-cache-entries' -d 'Live sessions (and as many resources) kept in memory for bearer decisions, invalidated by every write that changes them (default 10000; 0: none).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" shadow' -l 'shadow' -d 'A candidate policy set decided beside the live one after every answer, never served; disagreements counted in gatehouse_shadow_decisions_total and summarised at GET /v1/operator/shadow.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" console' -l 'console' -d 'Serve the operator console at /console (sign in with the operator credential; every action is an operator route).'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy serve" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy schema" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy schema" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy version" format' -l 'format' -d 'text or json' -rfka 'text json'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy version" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy version" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy keygen" out' -l 'out' -d 'Where to write the private key.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy keygen" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy keygen" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy bundle" -eq 1' -fa 'build' -d 'Build a signed bundle of a policy set folder.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy bundle" -eq 1' -fa 'verify' -d 'Verify a bundle\'s signature, hashes, format version and (with --held-revision) revision.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy bundle" -eq 1' -fa 'inspect' -d 'Print a bundle\'s manifest and files (read, not verified: use policy bundle verify).'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle build" key' -l 'key' -d 'The private key file policy keygen wrote.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle build" o' -s 'o' -d 'Where to write the bundle.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle build" revision' -l 'revision' -d 'The bundle\'s revision; devices refuse a lower one than they hold.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle build" created' -l 'created' -d 'The creation time, ISO 8601 (2026-11-25T12:00:00Z).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle build" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle build" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle verify" public-key' -l 'public-key' -d 'The pinned public key (base64), or a file holding it.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle verify" held-revision' -l 'held-revision' -d 'Refuse a bundle whose revision is lower than N (a downgrade).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle verify" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle verify" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle inspect" format' -l 'format' -d 'Output format: text or json.' -rfka 'text json'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle inspect" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy bundle inspect" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy replay" policies' -l 'policies' -d 'The candidate policy set folder.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy replay" base' -l 'base' -d 'Compare with the --policies folder as committed at this git revision, instead of the recorded outcomes.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy replay" format' -l 'format' -d 'Output format: text, json or markdown (a pull-request comment).' -rfka 'text json github markdown'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy replay" fail-on' -l 'fail-on' -d 'Exit 2 when a decision flips from allow to deny, or when any decision changes.' -rfka 'allow-to-deny any'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy replay" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy replay" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_positional "policy log" -eq 1' -fa 'pull' -d 'Save a server\'s decision records (newest first) as JSON lines for `policy replay`.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" server' -l 'server' -d 'The server\'s base URL.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" operator-token-file' -l 'operator-token-file' -d 'A file holding the operator token (a token on the command line would be visible to every user).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" o output' -l 'output' -s 'o' -d 'Where to write the records (\'-\' for standard output).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" from' -l 'from' -d 'Records at or after this RFC 3339 time.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" to' -l 'to' -d 'Records before this RFC 3339 time.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" user' -l 'user' -d 'Records of this user id.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" action' -l 'action' -d 'Records of this action.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" resource-type' -l 'resource-type' -d 'Records of this resource type.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" decision' -l 'decision' -d 'Records with this effect.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" reason' -l 'reason' -d 'Records with this reason.' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" max' -l 'max' -d 'Save at most this many records (default 100000).' -rfka ''
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" version' -l 'version' -d 'Show the version.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy log pull" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'policy' -n '__policy_should_offer_completions_for_flags_or_options "policy help" version' -l 'version' -d 'Show the version.'
