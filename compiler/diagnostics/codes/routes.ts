import { diag, q } from '../define.ts';

export const RouteFromHasPath = diag<{ from: string }>(
  'SVC3501', 'route-from-has-path', 'error',
  'A route `from` URL contains a path, query or fragment; since 0.8.0 paths are matched with `path`, `prefix` or `regex`.',
  (a) => `\`from\` URL ${q(a.from)} contains a path`,
  "match paths with the route's `path`, `prefix` or `regex` field",
);

export const RouteFromScheme = diag<{ from: string; scheme: string }>(
  'SVC3502', 'route-from-scheme', 'error',
  'A route `from` must use `https` or `tcp+https`.',
  (a) => `\`from\` URL ${q(a.from)} uses \`${a.scheme}\`; only \`https\` and \`tcp+https\` are served`,
  'use `https://` (plain HTTP is served only behind a TLS-terminating ingress with `insecure_server`)',
);

export const RouteToScheme = diag<{ to: string; expected: string }>(
  'SVC3503', 'route-to-scheme', 'error',
  '`to` URLs must use `http`, `https` or `tcp`; `tcp` exactly when `from` is `tcp+https`.',
  (a) => `\`to\` URL ${q(a.to)} must use ${a.expected}`,
  'TCP routes (`tcp+https://` in `from`) forward to `tcp://host:port`; HTTP routes to `http://` or `https://`',
);

export const RouteNoAction = diag(
  'SVC3504', 'route-no-action', 'error',
  'A route has neither `to` nor `redirect`.',
  () => 'route has neither `to` nor `redirect`',
  'add `to` with the upstream URL, or a `redirect` object',
);

export const RouteToAndRedirect = diag(
  'SVC3505', 'route-to-and-redirect', 'error',
  'A route has both `to` and `redirect`; a redirect route forwards nothing.',
  () => 'route has both `to` and `redirect`',
  'keep one of `to` and `redirect`',
);

export const RouteMultiplePathMatchers = diag<{ fields: string }>(
  'SVC3506', 'route-multiple-path-matchers', 'error',
  'A route sets more than one of `path`, `prefix` and `regex`.',
  (a) => `route sets ${a.fields}; only one path matcher is allowed`,
  'keep one of `path`, `prefix` and `regex`, or split the route',
);

export const RouteInvalidRegex = diag<{ field: string; problem: string }>(
  'SVC3507', 'route-invalid-regex', 'error',
  'A regular expression that is not valid RE2 (no backreferences, no look-around).',
  (a) => `\`${a.field}\` is not a valid RE2 expression: ${a.problem}`,
  'svc uses RE2 syntax: https://github.com/google/re2/wiki/Syntax',
);

export const RouteMultipleHostRewrites = diag<{ fields: string }>(
  'SVC3508', 'route-multiple-host-rewrites', 'error',
  'The host-rewrite options (`host_rewrite`, `host_rewrite_header`, the path-regex pair) and `preserve_host_header` are mutually exclusive.',
  (a) => `route sets ${a.fields}; they are mutually exclusive`,
  'keep one way of choosing the upstream Host',
);

export const RouteTimeoutExceedsGlobal = diag<{ timeout: string; global: string; key: string }>(
  'SVC3509', 'route-timeout-exceeds-global', 'error',
  'A route `timeout` above a non-zero global timeout (`timeout_read`, `timeout_write`) cannot take effect.',
  (a) => `route \`timeout\` ${a.timeout} exceeds \`${a.key}\` ${a.global}`,
  (a) => `lower the route timeout, or raise \`${a.key}\``,
);

export const RouteSetsHostHeader = diag<{ name: string }>(
  'SVC3510', 'route-sets-host-header', 'error',
  '`set_request_headers` cannot set `Host` or a `:` pseudo-header.',
  (a) => `\`set_request_headers\` cannot set ${q(a.name)}`,
  'use `host_rewrite`, `host_rewrite_header` or `preserve_host_header` to choose the upstream Host',
);

export const RoutePublicWithPolicy = diag<{ fields: string }>(
  'SVC3511', 'route-public-with-policy', 'error',
  'A public route (`allow_public_unauthenticated_access`) also lists who may pass; the lists would be ignored, which hides a mistake.',
  (a) => `public route also sets ${a.fields}`,
  'remove the allow-lists, or remove `allow_public_unauthenticated_access`',
);

export const RouteWeights = diag<{ problem: string }>(
  'SVC3512', 'route-weights', 'error',
  '`to` weights must be given for every URL or for none, and each must be a positive integer.',
  (a) => `\`to\` weights: ${a.problem}`,
  'write every entry as `URL,<weight>` with a weight of at least 1, or drop all weights',
);

export const RouteShadowed = diag<{ by: number; byAt: string }>(
  'SVC3513', 'route-shadowed', 'warning',
  'An earlier route matches every request this route matches, so this route is never used (the first matching route wins).',
  (a) => `route is never used: route ${a.by} (${a.byAt}) matches every request it matches`,
  'move the more specific route first',
);

export const RouteTlsSkipVerify = diag(
  'SVC3514', 'route-tls-skip-verify', 'warning',
  '`tls_skip_verify` accepts any upstream certificate: anyone on the path to the upstream can read and change the traffic.',
  () => '`tls_skip_verify` turns off upstream certificate verification',
  'use `tls_custom_ca` with the upstream\'s CA instead; keep `tls_skip_verify` for tests only',
);

export const RouteIncompletePair = diag<{ set: string; missing: string }>(
  'SVC3515', 'route-incomplete-pair', 'error',
  'One half of a field pair is set without the other (`regex_rewrite_pattern`/`_substitution`, `host_path_regex_rewrite_pattern`/`_substitution`, `tls_client_cert`/`tls_client_key`).',
  (a) => `\`${a.set}\` is set but \`${a.missing}\` is not`,
  (a) => `add \`${a.missing}\``,
);

export const RouteHealthCheckKind = diag<{ count: number }>(
  'SVC3516', 'route-health-check-kind', 'error',
  'Each `health_checks` entry configures exactly one of `http_health_check`, `tcp_health_check`, `grpc_health_check`.',
  (a) => (a.count === 0 ? 'health check configures no check' : `health check configures ${a.count} checks`),
  'give exactly one of `http_health_check`, `tcp_health_check` and `grpc_health_check` per entry',
);

export const RouteDuplicateName = diag<{ name: string; first: string }>(
  'SVC3517', 'route-duplicate-name', 'error',
  'Two routes share a `name`; names identify routes in metrics and in `svc diff`.',
  (a) => `route name ${q(a.name)} is already used at ${a.first}`,
  'give every route its own name',
);

export const RouteLbConfigMismatch = diag<{ field: string; policy: string }>(
  'SVC3518', 'route-lb-config-mismatch', 'error',
  'An `*_lb_config` object for a load-balancing policy the route does not use.',
  (a) => `\`${a.field}\` has no effect with \`lb_policy\` \`${a.policy}\``,
  (a) => `set \`lb_policy\` to match \`${a.field}\`, or remove it`,
);

export const RoutePathNotAbsolute = diag<{ field: string; value: string }>(
  'SVC3519', 'route-path-not-absolute', 'error',
  '`path`, `prefix`, `prefix_rewrite` and redirect paths must start with `/`.',
  (a) => `\`${a.field}\` ${q(a.value)} does not start with \`/\``,
  (a) => `write \`/${a.value}\``,
);

export const RouteMultipleUpstreamsUnchecked = diag(
  'SVC3520', 'route-multiple-upstreams-unchecked', 'warning',
  'A route with several `to` URLs has neither `health_checks` nor `outlier_detection`, so a dead upstream keeps receiving its share.',
  () => 'route balances over several upstreams without `health_checks` or `outlier_detection`',
  'add `health_checks`, `outlier_detection`, or both',
);

export const RouteDeprecatedOption = diag<{ field: string }>(
  'SVC3521', 'route-deprecated-option', 'warning',
  'A deprecated list-style route option (`allowed_users`, `allowed_domains`, `allowed_groups`, `allowed_idp_claims`, `allow_public_unauthenticated_access`, `allow_any_authenticated_user`, `cors_allow_preflight`). It still works and lowers into the same policy IR.',
  (a) => `\`${a.field}\` is deprecated`,
  (a) => `write it as a \`policy\`; \`svc compile --format text\` shows the equivalent (\`${a.field}\` → see docs/policy.md)`,
);

export const RouteWithoutPolicy = diag(
  'SVC3522', 'route-without-policy', 'warning',
  'A route with no policy and no allow option denies every request.',
  () => 'route has no policy: every request is denied',
  'add a `policy`, or `allow_public_unauthenticated_access` for a public route',
);

export const RouteTcpPathMatcher = diag<{ field: string }>(
  'SVC3523', 'route-tcp-path-matcher', 'error',
  'A `tcp+https` route tunnels a TCP stream; path matchers, rewrites and redirects do not apply to it.',
  (a) => `\`${a.field}\` does not apply to a \`tcp+https\` route`,
  (a) => `remove \`${a.field}\``,
);

export const RouteTcpWithoutPort = diag<{ from: string }>(
  'SVC3524', 'route-tcp-without-port', 'error',
  'A `tcp+https` route must name the port it serves in `from`, so several TCP services can share a host.',
  (a) => `\`from\` URL ${q(a.from)} has no port`,
  'write `tcp+https://host.example.com:<port>`',
);

export const RegexUnescapedDot = diag<{ field: string; value: string }>(
  'SVC3525', 'regex-unescaped-dot', 'warning',
  'A regex with an unescaped `.` next to letters looks like a literal host or file name; `.` matches any character (docs/security.md S29).',
  (a) => `\`${a.field}\` ${q(a.value)} has an unescaped \`.\` that matches any character`,
  'write `\\.` for a literal dot',
);

export const RouteRedirectEmpty = diag(
  'SVC3526', 'route-redirect-empty', 'error',
  'A `redirect` object that changes nothing would redirect to the same URL forever.',
  () => '`redirect` changes nothing: the client would be sent to the same URL',
  'set at least one of `https_redirect`, `scheme_redirect`, `host_redirect`, `port_redirect`, `path_redirect`, `prefix_rewrite`, `strip_query`',
);

export const RouteRedirectConflict = diag<{ a: string; b: string }>(
  'SVC3527', 'route-redirect-conflict', 'error',
  'Two redirect fields that contradict each other (`path_redirect` with `prefix_rewrite`, `https_redirect` with `scheme_redirect`).',
  (a) => `\`redirect.${a.a}\` and \`redirect.${a.b}\` cannot both be set`,
  (a) => `keep one of \`${a.a}\` and \`${a.b}\``,
);

export const RoutePrefixRewriteWithoutPrefix = diag(
  'SVC3528', 'route-prefix-rewrite-without-match', 'warning',
  '`prefix_rewrite` on a route without `prefix` or `path` replaces the whole leading `/`.',
  () => '`prefix_rewrite` is set but the route has no `prefix` or `path`',
  'add a `prefix` so it is clear which part of the path is replaced',
);

export const RouteMaglevTableSize = diag<{ size: number }>(
  'SVC3529', 'route-maglev-table-size', 'error',
  'A Maglev lookup table size that is not a prime number (the Maglev algorithm needs a prime).',
  (a) => `\`maglev_lb_config.table_size\` \`${a.size}\` is not a prime number`,
  'use a prime such as 65537 (the default) or 5000011',
);

export const RouteOutlierNeverEjects = diag<{ percent: number; upstreams: number; needed: number }>(
  'SVC3530', 'route-outlier-never-ejects', 'warning',
  '`outlier_detection` that can never eject an upstream: one upstream is more than `max_ejection_percent` of the route\'s upstreams.',
  (a) => `\`outlier_detection\` can never eject: one of ${a.upstreams} upstreams is more than \`max_ejection_percent\` ${a.percent}%`,
  (a) => `set \`max_ejection_percent\` to at least ${a.needed}, or rely on \`health_checks\``,
);

export const RouteRewriteDotSegments = diag<{ rewrite: string; prefix: string; request: string; forwarded: string }>(
  'SVC3540', 'route-rewrite-dot-segments', 'warning',
  'A `prefix_rewrite` (with the `to` path) that can splice a dot segment into the forwarded path: a dot right after a prefix that does not end in `/` lands at the start of a segment. svc refuses such requests with 400 `forwarded-path-dot-segment` (docs/decisions.md §6 step 5) rather than let the upstream resolve them to another path.',
  (a) => `\`prefix_rewrite\` ${q(a.rewrite)} after prefix ${q(a.prefix)} can make a dot segment: ${q(a.request)} would forward ${q(a.forwarded)}`,
  'end `prefix` with `/` (and `prefix_rewrite` with `/` too), so that the rewrite replaces whole segments; such requests are refused with 400',
);

export const RouteRestrictedPrefixVariants = diag<{ matcher: string; variant: string; by: number; byAt: string }>(
  'SVC3541', 'route-restricted-prefix-variants', 'warning',
  'A route with a policy matches its `path` or `prefix` case-sensitively (or without `;` path parameters), and a later public route on the same host answers the variants it misses: `/ADMIN/x` or `/admin;x/y` skips the restricted route and is forwarded by the public one. Java and some Node upstreams read such paths as the restricted one.',
  (a) => `restricted ${a.matcher} is followed by public route ${a.by} (${a.byAt}), which answers its variant ${q(a.variant)}`,
  'set `path_case: insensitive` on the restricted route, or narrow the public route so it cannot answer the restricted paths',
);

export const RouteFromWildcardHost = diag<{ from: string }>(
  'SVC3531', 'route-from-wildcard-host', 'error',
  'A `from` host with a `*` wildcard. svc matches hosts exactly; a wildcard host would be compared literally and the route would never match, so it is refused instead.',
  (a) => `\`from\` ${q(a.from)} has a wildcard host: svc does not support wildcard hosts yet`,
  'list each host this route serves, one route per host (a YAML anchor can share the rest of the route)',
);

export const RouteAnyUserWithAllowList = diag<{ fields: string }>(
  'SVC3532', 'route-any-user-with-allow-list', 'error',
  'A route with `allow_any_authenticated_user: true` also sets `allowed_users`, `allowed_domains`, `allowed_groups` or `allowed_idp_claims`. Any signed-in user passes, so the allow-list would be meaningless; the established proxy refuses this contradiction too.',
  (a) => `\`allow_any_authenticated_user\` lets every signed-in user in, so ${a.fields} would mean nothing`,
  'remove the allow-lists to let every signed-in user in, or remove `allow_any_authenticated_user` to let only the listed ones in',
);

export const RouteHostWithoutCertificate = diag<{ host: string }>(
  'SVC3542', 'route-host-without-certificate', 'warning',
  'The listener serves TLS (no `insecure_server`, no `autocert`) and a route\'s `from` host is covered by none of the configured certificates (`certificate`/`certificate_file`, `certificates`; a `*.example.com` name covers one label). svc would answer that name with a self-signed certificate it generates, which browsers and clients refuse. IP hosts are left out: SNI never carries one, so such a host gets the default certificate.',
  (a) => `no configured certificate covers the route host ${q(a.host)}: it would be served a generated self-signed certificate`,
  (a) => `add a certificate covering \`${a.host}\` (\`certificates\`), or enable \`autocert\`, or set \`insecure_server: true\` if TLS terminates before svc`,
);
