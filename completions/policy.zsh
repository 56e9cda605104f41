#compdef policy

__policy_complete() {
    local -ar non_empty_completions=("${@:#(|:*)}")
    local -ar empty_completions=("${(M)@:#(|:*)}")
    _describe -V '' non_empty_completions -- empty_completions -P $'\'\''
}

__policy_custom_complete() {
    local -a completions
    completions=("${(@f)"$("${command_name}" "${@}" "${command_line[@]}")"}")
    if [[ "${#completions[@]}" -gt 1 ]]; then
        __policy_complete "${completions[@]:0:-1}"
    fi
}

__policy_cursor_index_in_current_word() {
    if [[ -z "${QIPREFIX}${IPREFIX}${PREFIX}" ]]; then
        printf 0
    else
        printf %s "${#${(z)LBUFFER}[-1]}"
    fi
}

_policy() {
    emulate -RL zsh -G
    setopt extendedglob nullglob numericglobsort
    unsetopt aliases banghist

    local -xr SAP_SHELL=zsh
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(builtin emulate zsh -c 'printf %s "${ZSH_VERSION}"')"
    local -r SAP_SHELL_VERSION

    local context state state_descr line
    local -A opt_args

    local -r command_name="${words[1]}"
    local -ar command_line=("${words[@]}")
    local -ir current_word_index="$((CURRENT - 1))"

    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'check:Load and validate policy sets, lint them, run their tests and prove their invariants.'
            'decide:Decide one request (JSON) or a stream of requests (JSON Lines).'
            'explain:Decide one request and print the trace of every check and rule considered, with file:line:col.'
            'plan:Which resources of a type a subject may take an action on: always, never, or a condition on the resource.'
            'diff:Show which decisions change between two versions of a policy set.'
            'matrix:Print the decision table of a policy set: subject classes by actions, per resource type.'
            'serve:Serve decisions and sign-in over HTTP, reloading the policy folder as it changes.'
            'schema:Print the JSON Schema of a policy file (what schemas/policy.schema.json holds).'
            'version:Print the Gatehouse version, the git commit it was built from and the build date.'
            'keygen:Make an Ed25519 key to sign policy bundles with; print its public key.'
            'bundle:Build, verify and inspect signed policy bundles (one file an app decides from offline).'
            'replay:Re-decide recorded decisions under a candidate policy set and report whom the change hits.'
            'log:Work with a server'\''s decision records.'
            'help:Show subcommand help information.'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        check|decide|explain|plan|diff|matrix|serve|schema|version|keygen|bundle|replay|log|help)
            "_policy_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_policy_check() {
    local -i ret=1
    local -ar ___format=('text' 'json' 'github' 'junit' 'markdown')
    local -ar arg_specs=(
        '*:directories:'
        '--format[Output format\: text, json, github, junit or markdown.]:format:{__policy_complete "${___format[@]}"}'
        '--strict[Treat warnings (lints, invariant warnings) as errors\: exit 1.]'
        '--coverage[Report which rules, condition branches and requirement outcomes the policy tests exercise, per file.]'
        '--min-coverage[Exit 2 when a set'\''s test coverage is below N percent (0-100); implies --coverage.]:N:'
        '--junit-output[Also write the JUnit XML report to FILE, whatever --format is.]:FILE:'
        '--public-key[Verify a bundle file'\''s signature with this public key (base64, or a file holding it) before reading it.]:KEY:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_decide() {
    local -i ret=1
    local -ar arg_specs=(
        '--policies[The policy set folder.]:policies:'
        '--request[A file holding one request JSON (default\: standard input).]:request:'
        '--jsonl[Read JSON Lines from standard input; write one decision per line.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_explain() {
    local -i ret=1
    local -ar ___format=('text' 'json')
    local -ar arg_specs=(
        '--policies[The policy set folder.]:policies:'
        '--request[A file holding one request JSON; - for standard input.]:FILE:'
        '--format[Output format\: text, or json (the contract'\''s decision plus a trace array).]:format:{__policy_complete "${___format[@]}"}'
        '--subject-id[The subject'\''s id (default\: user).]:subject-id:'
        '--signed-out[The subject is signed out (no id).]'
        '--subject-tier[The subject'\''s subscription tier.]:subject-tier:'
        '--subscription-expiry[When the subscription lapses (RFC 3339).]:TIME:'
        '--expired[The subscription lapsed a day before now.]'
        '*--app-role[An app role the subject holds (repeatable).]:ROLE:'
        '--auth-method[How the subject was verified\: anonymous, apple, pin, biometric, password.]:METHOD:'
        '--verified-ago[Verified that long before now, e.g. 5m or 1h30m (needs --auth-method).]:DURATION:'
        '--verified-at[Verified at this time (RFC 3339; needs --auth-method).]:TIME:'
        '*--subject-attribute[A subject attribute, typed by the set'\''s declaration (repeatable).]:NAME=VALUE:'
        '--action[The action.]:action:'
        '--resource-type[The resource type (default\: the one type that has --action).]:resource-type:'
        '--resource-id[The resource'\''s id.]:resource-id:'
        '--owner[The resource'\''s owner\: self (the subject) or a user id.]:self|ID:'
        '--member-role[The subject'\''s role on the resource, as a member.]:ROLE:'
        '*--usage[A usage counter of the resource (repeatable).]:COUNTER=N:'
        '*--resource-attribute[A resource attribute (repeatable).]:NAME=VALUE:'
        '*--context-attribute[A context attribute (repeatable).]:NAME=VALUE:'
        '--now[The instant to decide at (RFC 3339; default\: the clock).]:TIME:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_plan() {
    local -i ret=1
    local -ar ___format=('text' 'json')
    local -ar arg_specs=(
        '--policies[The policy set folder.]:policies:'
        '--format[Output format\: text, or json (the contract'\''s plan object).]:format:{__policy_complete "${___format[@]}"}'
        '--subject-id[The subject'\''s id (default\: user).]:subject-id:'
        '--signed-out[The subject is signed out (no id).]'
        '--subject-tier[The subject'\''s subscription tier.]:subject-tier:'
        '--subscription-expiry[When the subscription lapses (RFC 3339).]:TIME:'
        '--expired[The subscription lapsed a day before now.]'
        '*--app-role[An app role the subject holds (repeatable).]:ROLE:'
        '--auth-method[How the subject was verified\: anonymous, apple, pin, biometric, password.]:METHOD:'
        '--verified-ago[Verified that long before now, e.g. 5m or 1h30m (needs --auth-method).]:DURATION:'
        '--verified-at[Verified at this time (RFC 3339; needs --auth-method).]:TIME:'
        '*--subject-attribute[A subject attribute, typed by the set'\''s declaration (repeatable).]:NAME=VALUE:'
        '--action[The action.]:action:'
        '--resource-type[The resource type (default\: the one type that has --action).]:resource-type:'
        '--resource-id[The resource'\''s id.]:resource-id:'
        '--owner[The resource'\''s owner\: self (the subject) or a user id.]:self|ID:'
        '--member-role[The subject'\''s role on the resource, as a member.]:ROLE:'
        '*--usage[A usage counter of the resource (repeatable).]:COUNTER=N:'
        '*--resource-attribute[A resource attribute (repeatable).]:NAME=VALUE:'
        '*--context-attribute[A context attribute (repeatable).]:NAME=VALUE:'
        '--now[The instant to decide at (RFC 3339; default\: the clock).]:TIME:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_diff() {
    local -i ret=1
    local -ar ___format=('text' 'json' 'github' 'markdown')
    local -ar arg_specs=(
        '*:folders:'
        '--base[Compare the folder in the working tree with the same folder at this git revision (read with git, no checkout).]:base:'
        '--fail-on-widening[Exit 2 when any request that was denied becomes allowed.]'
        '--format[Output format\: text, json or markdown (a pull-request comment).]:format:{__policy_complete "${___format[@]}"}'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_matrix() {
    local -i ret=1
    local -ar ___format=('text' 'markdown' 'html' 'json')
    local -ar arg_specs=(
        ':directory:'
        '--resource[Only this resource type.]:TYPE:'
        '--format[Output format\: text, markdown, html or json.]:format:{__policy_complete "${___format[@]}"}'
        '--public-key[Verify a bundle file'\''s signature with this public key (base64, or a file holding it) before reading it.]:KEY:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_serve() {
    local -i ret=1
    local -ar arg_specs=(
        '--policies[The policy set folder (watched for changes).]:policies:'
        '--database[The identity database\: a SQLite file (created if missing) or postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DATABASE (also postgresql\://; options ?sslmode=disable|prefer|require&max_connections=N&schema=NAME).]:FILE_OR_URL:'
        '--host[Address to bind (default 127.0.0.1).]:host:'
        '--port[Port to bind (default 8080; 0 picks a free one).]:port:'
        '*--apple-client-id[A Sign in with Apple client id (repeatable).]:apple-client-id:'
        '--apple-jwks[Apple'\''s JWKS\: a file or a URL (default Apple'\''s).]:FILE_OR_URL:'
        '--operator-token-file[A file holding the operator credential (16+ characters).]:FILE:'
        '--bundle-key[Sign and serve the active version'\''s bundle at /v1/bundle with this key (policy keygen).]:KEYFILE:'
        '--strict-reload[Refuse reloads whose policy tests fail, not only ones that do not load.]'
        '--body-limit[Largest request body in bytes (default 1 MiB).]:body-limit:'
        '--sign-in-limit[Sign-in, PIN and device requests per client address per window (default 10/60).]:REQUESTS/SECONDS:'
        '*--trusted-proxy[A load balancer'\''s IP address whose X-Forwarded-For names the client (repeatable).]:ADDR:'
        '--read-timeout[Seconds to read a whole request, header and body, from its first byte (default 10).]:SECONDS:'
        '--request-timeout[Seconds to answer a request once read; past it the answer is 503 storage_unavailable (default 15).]:SECONDS:'
        '--decision-log[Which decisions to record with their inputs\: off (default), denied, all, or sample\:R (a fraction R of all). Written in batches off the answer'\''s path; rows expire with the logs'\'' retention.]:off|denied|all|sample\:R:'
        '--decision-log-signed-out[Also record decisions made for no live session (no bearer, no subject id); off by default, as anyone can make them.]'
        '--decision-log-limit[Decision records per account and per client address per window; past it records are dropped and counted (default 600/60).]:REQUESTS/SECONDS:'
        '*--app-store-bundle-id[An app'\''s bundle id whose App Store purchases change tiers (repeatable; purchases are off without one).]:app-store-bundle-id:'
        '*--app-store-environment[An App Store environment accepted (repeatable; default Production only).]:Production|Sandbox|Xcode:'
        '*--app-store-root-certificate[A DER or PEM root certificate trusted besides Apple Root CA - G3 (repeatable).]:FILE:'
        '--trust-caller-subjects[Decide for the subject a request names when it has no bearer (a backend that authenticated its user itself).]'
        '--write-limit[Writes per account per window (default 30/60).]:REQUESTS/SECONDS:'
        '--source-write-limit[Writes per client address per window, whatever the accounts (default 120/60).]:REQUESTS/SECONDS:'
        '--maintenance-interval[Seconds between maintenance runs\: expired rows purged, old logs expired (default 3600).]:SECONDS:'
        '--retention[Days audit and decision logs are kept (default 365, at least 30).]:DAYS:'
        '--ipv6-prefix[IPv6 prefix length that keys per-client limits (default 64).]:BITS:'
        '--max-connections[Connections open at once; more are closed at once (default half the open-file limit, at most 10000).]:N:'
        '--max-connections-per-client[Connections one client (an IPv4 address, an IPv6 /64) may hold open; more are closed at once (default 64).]:N:'
        '--notification-limit[App Store notifications per client, REQUESTS/SECONDS, before any verification (default 600/60).]:REQUESTS/SECONDS:'
        '--access-token-lifetime[Seconds an access token works before the client must refresh it (default 900).]:SECONDS:'
        '--refresh-grace-period[Seconds a rotated refresh token may be presented again by a racing client; other reuse ends the session (default 10).]:SECONDS:'
        '--decision-cache-entries[Live sessions (and as many resources) kept in memory for bearer decisions, invalidated by every write that changes them (default 10000; 0\: none).]:N:'
        '--shadow[A candidate policy set decided beside the live one after every answer, never served; disagreements counted in gatehouse_shadow_decisions_total and summarised at GET /v1/operator/shadow.]:DIR:'
        '--console[Serve the operator console at /console (sign in with the operator credential; every action is an operator route).]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_schema() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_version() {
    local -i ret=1
    local -ar ___format=('text' 'json')
    local -ar arg_specs=(
        '--format[text or json]:format:{__policy_complete "${___format[@]}"}'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_keygen() {
    local -i ret=1
    local -ar arg_specs=(
        '--out[Where to write the private key.]:KEYFILE:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_bundle() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'build:Build a signed bundle of a policy set folder.'
            'verify:Verify a bundle'\''s signature, hashes, format version and (with --held-revision) revision.'
            'inspect:Print a bundle'\''s manifest and files (read, not verified: use policy bundle verify).'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        build|verify|inspect)
            "_policy_bundle_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_policy_bundle_build() {
    local -i ret=1
    local -ar arg_specs=(
        ':directory:'
        '--key[The private key file policy keygen wrote.]:KEYFILE:'
        '-o[Where to write the bundle.]:FILE:'
        '--revision[The bundle'\''s revision; devices refuse a lower one than they hold.]:N:'
        '--created[The creation time, ISO 8601 (2026-11-25T12\:00\:00Z).]:TIME:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_bundle_verify() {
    local -i ret=1
    local -ar arg_specs=(
        ':file:'
        '--public-key[The pinned public key (base64), or a file holding it.]:KEY:'
        '--held-revision[Refuse a bundle whose revision is lower than N (a downgrade).]:N:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_bundle_inspect() {
    local -i ret=1
    local -ar ___format=('text' 'json')
    local -ar arg_specs=(
        ':file:'
        '--format[Output format\: text or json.]:format:{__policy_complete "${___format[@]}"}'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_replay() {
    local -i ret=1
    local -ar ___format=('text' 'json' 'github' 'markdown')
    local -ar ___fail_on=('allow-to-deny' 'any')
    local -ar arg_specs=(
        ':records:'
        '--policies[The candidate policy set folder.]:policies:'
        '--base[Compare with the --policies folder as committed at this git revision, instead of the recorded outcomes.]:base:'
        '--format[Output format\: text, json or markdown (a pull-request comment).]:format:{__policy_complete "${___format[@]}"}'
        '--fail-on[Exit 2 when a decision flips from allow to deny, or when any decision changes.]:allow-to-deny|any:{__policy_complete "${___fail_on[@]}"}'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_log() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'pull:Save a server'\''s decision records (newest first) as JSON lines for `policy replay`.'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        pull)
            "_policy_log_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_policy_log_pull() {
    local -i ret=1
    local -ar arg_specs=(
        '--server[The server'\''s base URL.]:server:'
        '--operator-token-file[A file holding the operator token (a token on the command line would be visible to every user).]:operator-token-file:'
        '(--output -o)'{--output,-o}'[Where to write the records ('\''-'\'' for standard output).]:output:'
        '--from[Records at or after this RFC 3339 time.]:from:'
        '--to[Records before this RFC 3339 time.]:to:'
        '--user[Records of this user id.]:user:'
        '--action[Records of this action.]:action:'
        '--resource-type[Records of this resource type.]:resource-type:'
        '--decision[Records with this effect.]:allow|deny:'
        '--reason[Records with this reason.]:reason:'
        '--max[Save at most this many records (default 100000).]:max:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_policy_help() {
    local -i ret=1
    local -ar arg_specs=(
        '*:subcommands:'
        '--version[Show the version.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

if [[ "${funcstack[1]}" = _policy ]]; then
    _policy "${@}"
else
    compdef _policy policy
fi
