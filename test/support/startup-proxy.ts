/**
 * A TCP proxy in front of PostgreSQL that drops every startup parameter but the user, the database and
 * the application name, as PgBouncer does with the others listed in `ignore_startup_parameters`: a
 * client's `options`, `statement_timeout` and the like never reach the server.
 */
import { connect, createServer, type Socket } from 'node:net';

const PROTOCOL_3 = 196608;
const KEPT = new Set(['user', 'database', 'application_name']);

export interface StartupProxy {
  readonly port: number;
  close(): Promise<void>;
}

export async function startStartupProxy(target: { host: string; port: number }): Promise<StartupProxy> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    track(client);
    client.on('error', () => client.destroy());
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 4 || buffered.length < buffered.readInt32BE(0)) return;
      client.off('data', onData);
      client.pause();
      const length = buffered.readInt32BE(0);
      const upstream = connect(target.port, target.host);
      track(upstream);
      const closeBoth = (): void => {
        client.destroy();
        upstream.destroy();
      };
      upstream.on('error', closeBoth);
      upstream.once('close', closeBoth);
      client.once('close', closeBoth);
      upstream.once('connect', () => {
        upstream.write(withoutStartupParameters(buffered.subarray(0, length)));
        if (buffered.length > length) upstream.write(buffered.subarray(length));
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    client.on('data', onData);
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('the proxy has no port');
  return {
    port: address.port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((closed) => server.close(() => closed()));
    },
  };
}

/** A StartupMessage (length, protocol, then name\0value\0 pairs and a final \0) with only KEPT names. */
function withoutStartupParameters(message: Buffer): Buffer {
  if (message.readInt32BE(4) !== PROTOCOL_3) return message; // a CancelRequest passes as it is
  const fields = message
    .subarray(8, message.length - 1)
    .toString('utf8')
    .split('\0');
  let body = '';
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (KEPT.has(fields[i]!)) body += `${fields[i]}\0${fields[i + 1]}\0`;
  }
  const payload = Buffer.from(`${body}\0`, 'utf8');
  const rewritten = Buffer.alloc(8 + payload.length);
  rewritten.writeInt32BE(rewritten.length, 0);
  rewritten.writeInt32BE(PROTOCOL_3, 4);
  payload.copy(rewritten, 8);
  return rewritten;
}
