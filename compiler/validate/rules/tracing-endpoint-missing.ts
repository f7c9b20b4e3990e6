import { TracingEndpointMissing } from '../../diagnostics/codes/settings.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { isGiven } from './helpers.ts';

/** The endpoints each tracing provider needs (docs/tracing.md "Exporters"). */
const NEEDS: Readonly<Record<string, readonly string[]>> = {
  jaeger: ['tracing_jaeger_collector_endpoint', 'tracing_jaeger_agent_endpoint'],
  zipkin: ['tracing_zipkin_endpoint'],
};

/** `tracing-endpoint-missing`: one report per endpoint the chosen provider needs, at `tracing_provider`. */
export const tracingEndpointMissing: ValidationRule = {
  reports: [TracingEndpointMissing],
  check(input, r) {
    const provider = input.config['tracing_provider'];
    // Only the table's own keys: a provider named `valueOf` needs nothing (and is reported elsewhere).
    if (typeof provider !== 'string' || !Object.hasOwn(NEEDS, provider)) return;
    for (const key of NEEDS[provider] ?? []) {
      if (!isGiven(input.config, key)) r.report(TracingEndpointMissing, spanOf(input, 'tracing_provider'), { provider, key }, key);
    }
  },
};
