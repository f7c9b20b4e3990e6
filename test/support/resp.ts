/** A minimal Redis (RESP) client for end-to-end tests that reach Redis through svc's tunnels. */
import { connect } from 'node:net';

/**
 * Sends `commands` (RESP, inline or array form, `\r\n`-terminated) on a fresh connection to
 * `port` on loopback and resolves with what came back once there is a reply line per command,
 * the connection closes, or `timeoutMs` passes. A connection error resolves with `error:` and what
 * had arrived, so a refused tunnel is an answer to assert on, not an exception.
 */
export function sendResp(port: number, commands: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => s.write(commands));
    let out = '';
    s.on('data', (c) => {
      out += c.toString();
      if (out.endsWith('\r\n') && out.split('\r\n').length > commands.split('\r\n').length - 1) s.end();
    });
    s.on('error', () => resolve(`error:${out}`));
    s.on('close', () => resolve(out));
    setTimeout(() => s.destroy(), timeoutMs);
  });
}
