import type { ValidationRule } from '../rule.ts';
import { autocertWildcardHost } from './autocert-wildcard-host.ts';
import { controlCharacter } from './control-character.ts';
import { dependentSettingMissing } from './dependent-setting-missing.ts';
import { directoryRefreshOutOfRange } from './directory-refresh-out-of-range.ts';
import { forwardAuthCallerUnauthenticated } from './forward-auth-caller-unauthenticated.ts';
import { groupsWithoutServiceAccount } from './groups-without-service-account.ts';
import { insecureSetting } from './insecure-setting.ts';
import { invalidServiceAccount } from './invalid-service-account.ts';
import { invalidServerlessServiceAccount } from './invalid-serverless-service-account.ts';
import { invalidValue } from './invalid-value.ts';
import { metricsBasicAuthEmptyCredential } from './metrics-basic-auth-empty-credential.ts';
import { missingRequiredSetting } from './missing-required-setting.ts';
import { mutuallyExclusiveSettings } from './mutually-exclusive-settings.ts';
import { noCertificates } from './no-certificates.ts';
import { regexUnescapedDot } from './regex-unescaped-dot.ts';
import { routeAnyUserWithAllowList } from './route-any-user-with-allow-list.ts';
import { routeDeprecatedOption } from './route-deprecated-option.ts';
import { routeDuplicateName } from './route-duplicate-name.ts';
import { routeFromHasPath } from './route-from-has-path.ts';
import { routeFromScheme } from './route-from-scheme.ts';
import { routeFromWildcardHost } from './route-from-wildcard-host.ts';
import { routeHealthCheckKind } from './route-health-check-kind.ts';
import { routeHostWithoutCertificate } from './route-host-without-certificate.ts';
import { routeIncompletePair } from './route-incomplete-pair.ts';
import { routeInvalidRegex } from './route-invalid-regex.ts';
import { routeLbConfigMismatch } from './route-lb-config-mismatch.ts';
import { routeMaglevTableSize } from './route-maglev-table-size.ts';
import { routeMultipleHostRewrites } from './route-multiple-host-rewrites.ts';
import { routeOutlierNeverEjects } from './route-outlier-never-ejects.ts';
import { routeMultiplePathMatchers } from './route-multiple-path-matchers.ts';
import { routeMultipleUpstreamsUnchecked } from './route-multiple-upstreams-unchecked.ts';
import { routeNoAction } from './route-no-action.ts';
import { routePathNotAbsolute } from './route-path-not-absolute.ts';
import { routePrefixRewriteWithoutMatch } from './route-prefix-rewrite-without-match.ts';
import { routePublicWithPolicy } from './route-public-with-policy.ts';
import { routeRedirectConflict } from './route-redirect-conflict.ts';
import { routeRedirectEmpty } from './route-redirect-empty.ts';
import { routeRestrictedPrefixVariants } from './route-restricted-prefix-variants.ts';
import { routeRewriteDotSegments } from './route-rewrite-dot-segments.ts';
import { routeSetsHostHeader } from './route-sets-host-header.ts';
import { routeShadowed } from './route-shadowed.ts';
import { routeTcpPathMatcher } from './route-tcp-path-matcher.ts';
import { routeTcpWithoutPort } from './route-tcp-without-port.ts';
import { routeTimeoutExceedsGlobal } from './route-timeout-exceeds-global.ts';
import { routeTlsSkipVerify } from './route-tls-skip-verify.ts';
import { routeToAndRedirect } from './route-to-and-redirect.ts';
import { routeToScheme } from './route-to-scheme.ts';
import { routeWeights } from './route-weights.ts';
import { routeWithoutPolicy } from './route-without-policy.ts';
import { settingWithoutEffect } from './setting-without-effect.ts';
import { tracingEndpointMissing } from './tracing-endpoint-missing.ts';

/**
 * Every validation rule, run in this order (all of them run; order only affects report order
 * before the final sort by location). Settings first, then routes roughly in field order.
 */
export const RULES: readonly ValidationRule[] = [
  // settings (docs/configuration.md "Settings")
  controlCharacter,
  noCertificates,
  missingRequiredSetting,
  mutuallyExclusiveSettings,
  dependentSettingMissing,
  settingWithoutEffect,
  tracingEndpointMissing,
  invalidValue,
  directoryRefreshOutOfRange,
  metricsBasicAuthEmptyCredential,
  invalidServiceAccount,
  invalidServerlessServiceAccount,
  insecureSetting,
  groupsWithoutServiceAccount,
  forwardAuthCallerUnauthenticated,
  autocertWildcardHost,
  // routes (docs/configuration.md "Route fields", docs/policy.md)
  routeFromHasPath,
  routeFromScheme,
  routeFromWildcardHost,
  routeHostWithoutCertificate,
  routeTcpWithoutPort,
  routeToScheme,
  routeNoAction,
  routeToAndRedirect,
  routeWeights,
  routeMultipleUpstreamsUnchecked,
  routeMultiplePathMatchers,
  routePathNotAbsolute,
  routeTcpPathMatcher,
  routeInvalidRegex,
  regexUnescapedDot,
  routePrefixRewriteWithoutMatch,
  routeRestrictedPrefixVariants,
  routeRewriteDotSegments,
  routeIncompletePair,
  routeMultipleHostRewrites,
  routeSetsHostHeader,
  routeTimeoutExceedsGlobal,
  routePublicWithPolicy,
  routeAnyUserWithAllowList,
  routeDeprecatedOption,
  routeWithoutPolicy,
  routeRedirectEmpty,
  routeRedirectConflict,
  routeTlsSkipVerify,
  routeHealthCheckKind,
  routeLbConfigMismatch,
  routeMaglevTableSize,
  routeOutlierNeverEjects,
  routeDuplicateName,
  routeShadowed,
];
