/** What the benchmarks share: a timed load loop, a process's CPU and memory from /proc, and a served CLI. */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
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
