/**
 * The one HTTP call the hand-written exporters make (jaeger-exporter.ts, apm-exporter.ts): send a
 * body to a collector and say whether it took it (2xx). Bounded by a timeout; never throws.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';

/** How long a collector may take to answer one export. */
const EXPORT_TIMEOUT_MS = 10_000;

export function sendSpans(url: URL, method: 'POST' | 'PUT', headers: Record<string, string>, body: Buffer | string, done: (result: ExportResult) => void): void {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  let answered = false;
  const answer = (error?: Error) => {
    if (answered) return;
    answered = true;
    done(error ? { code: ExportResultCode.FAILED, error } : { code: ExportResultCode.SUCCESS });
  };
  const req = request(url, { method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, timeout: EXPORT_TIMEOUT_MS }, (res) => {
    res.resume();
    res.on('end', () => answer(res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300 ? undefined : new Error(`the collector answered ${res.statusCode}`)));
    res.on('error', (e) => answer(e));
  });
  req.on('timeout', () => req.destroy(new Error(`the collector did not answer within ${EXPORT_TIMEOUT_MS / 1000} s`)));
  req.on('error', (e) => answer(e));
  req.end(body);
}
