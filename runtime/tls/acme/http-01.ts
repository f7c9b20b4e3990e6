/**
 * HTTP-01 answers (RFC 8555 §8.3) on the http→https redirect listener (`http_redirect_addr`):
 * `GET /.well-known/acme-challenge/<token>` with a pending token is answered with its key
 * authorization before the redirect; anything else goes on to the redirect.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ChallengeResponder } from './challenges.ts';

const PREFIX = '/.well-known/acme-challenge/';

/** Answers `req` when it is an HTTP-01 validation request; returns whether it did. */
export function answerHttp01(responder: ChallengeResponder, req: IncomingMessage, res: ServerResponse): boolean {
  const url = req.url ?? '';
  if (!url.startsWith(PREFIX) || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
  const token = url.slice(PREFIX.length).split('?')[0] ?? '';
  const keyAuthorization = responder.http01(token);
  if (keyAuthorization === undefined) {
    res.writeHead(404, { 'content-type': 'text/plain', connection: 'close' }).end();
    return true;
  }
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : keyAuthorization);
  return true;
}
