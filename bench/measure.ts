/** What the benchmarks share: a timed load loop, a process's CPU and memory from /proc, and a served CLI. */
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const CLI = resolve('dist/src/cli.js');

/** An SDK client named `name`, connected over stdio to the built CLI run with `env` (and PATH). */
export async function connectCli(name: string, env: Record<string, string>): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI],
      env: { PATH: process.env.PATH ?? '', ...env },
      stderr: 'ignore',
    }),
  );
  return client;
}

/** Calls from `concurrency` workers until `ms` have passed; returns how many completed. */
export async function runFor(
  call: () => Promise<void>,
  concurrency: number,
  ms: number,
  latencies?: number[],
): Promise<number> {
  const deadline = performance.now() + ms;
  let calls = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const started = performance.now();
        await call();
        latencies?.push(performance.now() - started);
        calls++;
      }
    }),
  );
  return calls;
}

/** A process's CPU time so far, user and system, in ms. */
export async function cpuMs(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in 10 ms ticks
}

/** A process's memory in MB from /proc: VmRSS now, or VmHWM, its peak since the last reset. */
export async function memoryMb(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)![1]) / 1024;
}

export interface ServedCli {
  readonly pid: number;
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Starts the CLI with `args` (a `serve --http`), resolving with its URL once it listens. Its log is
 * read until then and only drained after: kept, it would grow a string in the measuring process.
 */
export function startServer(args: string[], env: Record<string, string>, nodeFlags: string[] = []): Promise<ServedCli> {
  const child = spawn(process.execPath, [...nodeFlags, CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  return new Promise((done, fail) => {
    const read = (chunk: Buffer): void => {
      stderr += chunk.toString('utf8');
      const match = /listening on (http:\/\/[^"\s]+)/.exec(stderr);
      if (!match) return;
      child.stderr.off('data', read);
      child.stderr.resume();
      done({
        pid: child.pid!,
        url: match[1]!,
        stop: () =>
          new Promise((stopped) => {
            child.once('exit', () => stopped());
            child.kill('SIGTERM');
          }),
      });
    };
    child.stderr.on('data', read);
    child.once('exit', (code) => fail(new Error(`server exited with ${code}: ${stderr}`)));
  });
}

/**
 * A keep-alive HTTP client sending one tools/call per request, as a stateless MCP client may, with
 * `headers` (a bearer token, say) on each.
 */
export function httpCaller(
  url: string,
  concurrency: number,
  workload: { readonly tool: string; readonly args: Record<string, unknown> },
  headers: Record<string, string> = {},
): () => Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: workload.tool, arguments: workload.args },
  });
  return () =>
    new Promise((done, fail) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'content-length': Buffer.byteLength(body),
            ...headers,
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString('utf8')));
          res.on('end', () => {
            // JSON, or (for servers that always stream) one server-sent event carrying the JSON.
            const json = text.trimStart().startsWith('{')
              ? text
              : (text
                  .split('\n')
                  .find((line) => line.startsWith('data:'))
                  ?.slice(5) ?? '');
            let reply: { result?: { isError?: boolean } } = {};
            try {
              reply = JSON.parse(json) as typeof reply;
            } catch {
              // reported below as a bad reply
            }
            if (res.statusCode !== 200 || !reply.result || reply.result.isError)
              fail(new Error(`bad reply: ${text.slice(0, 300)}`));
            else done();
          });
        },
      );
      req.on('error', fail);
      req.end(body);
    });
}

/** Replaces the report's section under `heading` (which `section` begins with), keeping the others. */
export async function writeSection(path: string, heading: string, section: string): Promise<void> {
  const current = await readFile(path, 'utf8').catch(
    () => '# Benchmarks\n\nWritten by `npm run bench`; see bench/run.ts.\n\n',
  );
  const start = current.indexOf(`${heading}\n`);
  if (start === -1) return writeFile(path, `${current.trimEnd()}\n\n${section}`);
  const next = current.indexOf('\n## ', start + heading.length);
  await writeFile(path, `${current.slice(0, start)}${section}${next === -1 ? '' : current.slice(next + 1)}`);
}
