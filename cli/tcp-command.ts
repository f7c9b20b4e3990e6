/** `svc tcp tcp+https://host:port --listen 127.0.0.1:PORT [--proxy URL]`: runs until SIGINT/SIGTERM. */
import { startTunnel } from './tcp-tunnel.ts';

export async function tcpCommand(route: string, opts: { listen: string; proxy?: string }, io: { out: (s: string) => void; err: (s: string) => void }): Promise<number> {
  const m = /^(.*):(\d{1,5})$/.exec(opts.listen);
  if (!m) {
    io.err(`error: --listen \`${opts.listen}\` is not host:port\n`);
    return 2;
  }
  try {
    const server = await startTunnel({ route, ...(opts.proxy !== undefined ? { proxy: opts.proxy } : {}), listen: { host: m[1]!, port: Number(m[2]) }, onError: (msg) => io.err(`${msg}\n`) });
    io.err(`listening on ${opts.listen}: connections go to ${route} through svc\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
    server.close();
    return 0;
  } catch (e) {
    io.err(`error: ${(e as Error).message}\n`);
    return 2;
  }
}
