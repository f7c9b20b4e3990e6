// The container image's HEALTHCHECK (deploy/image/build, deploy/image/Containerfile): exits 0 when
// svc's main listener answers `GET /.svc/ping` with 200, else 1 (docs/observability.md, "Health
// endpoints"). /.svc/ping is the liveness endpoint svc always serves on its main listener, with or
// without metrics_address, and it stays 200 while svc drains, so a stopping container is not
// reported unhealthy. It depends on nothing outside the process.
//
// SVC_HEALTHCHECK_URL says where (default https://127.0.0.1:443/.svc/ping; http:// for
// insecure_server). Over HTTPS the probe sends no SNI, so svc presents its default certificate, and
// asks for a host that certificate covers (its first DNS name; a wildcard's with `healthcheck` as
// the first label): svc answers 421 to a host its certificate does not cover. SVC_HEALTHCHECK_HOST
// names the host instead (sent as SNI and Host). The certificate is not verified: the probe talks
// to svc on loopback and asks only whether it answers.
import http from 'node:http';
import tls from 'node:tls';

const TIMEOUT_MS = 4000;
const url = new URL(process.env.SVC_HEALTHCHECK_URL || 'https://127.0.0.1:443/.svc/ping');
const named = process.env.SVC_HEALTHCHECK_HOST || '';

function done(ok, why) {
  if (!ok) process.stderr.write(`svc health check: ${url.href}: ${why}\n`);
  process.exit(ok ? 0 : 1);
}
setTimeout(() => done(false, `no answer in ${TIMEOUT_MS} ms`), TIMEOUT_MS).unref();

/** A host the certificate covers: its first DNS name, a wildcard's first label filled in. */
function coveredHost(cert) {
  const dns = (cert.subjectaltname ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4));
  const name = dns[0] ?? cert.subject?.CN ?? '';
  return name.startsWith('*.') ? `healthcheck${name.slice(1)}` : name;
}

if (url.protocol === 'http:') {
  const req = http.get(url, { headers: named ? { host: named } : {} }, (res) => {
    res.resume();
    done(res.statusCode === 200, `status ${res.statusCode}`);
  });
  req.on('error', (e) => done(false, e.message));
} else if (url.protocol === 'https:') {
  const port = Number(url.port || 443);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const socket = tls.connect({ host, port, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'], ...(named ? { servername: named } : {}) }, () => {
    const authority = named || coveredHost(socket.getPeerCertificate());
    if (!authority) return done(false, 'the certificate names no host');
    socket.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${authority}\r\nUser-Agent: svc-healthcheck\r\nConnection: close\r\n\r\n`);
  });
  let head = '';
  socket.on('data', (d) => {
    head += d.toString('latin1');
    const line = head.split('\r\n', 1)[0];
    if (head.includes('\r\n')) done(/^HTTP\/1\.1 200 /.test(line), line);
  });
  socket.on('error', (e) => done(false, e.message));
  socket.on('end', () => done(false, 'connection closed without an answer'));
} else {
  done(false, 'SVC_HEALTHCHECK_URL must be http:// or https://');
}
