/**
 * Each destination of a scheduled report, sent to a real peer on loopback: a folder, an HTTP receiver
 * (JSON and Slack-compatible bodies, a signature, a refusal for good and one for now), and an SMTP
 * server (the page inline, the other files attached; a server that refuses the recipient, and none).
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryError, send, type Parcel } from '../../src/schedules/destinations.js';

let dir: string;
let receiver: Server;
let base: string;
let smtp: SMTPServer;
let smtpUrl: string;
const requests: { url: string; headers: IncomingHttpHeaders; body: string }[] = [];
const mails: ParsedMail[] = [];

const PARCEL: Parcel = {
  schedule: 'weekly-team',
  report: 'weekly_sales_report',
  dueAt: new Date('2025-03-31T06:00:00Z'),
  edition: 'e1',
  idempotencyKey: 'key-1',
  dataScope: { region: ['Europe'] },
  answer: {
    start_date: '2025-03-24',
    end_date: '2025-03-30',
    summary: 'Net revenue 1,204.50 EUR.',
    alerts: [{ rule: 'rows in daily', text: 'Alert: 7 rows in daily.' }],
  },
  files: [
    { name: 'weekly-team-2025-03-31-Europe.html', content: '<!doctype html><p>page</p>' },
    { name: 'weekly-team-2025-03-31-Europe.about.csv', content: 'field,value\r\n' },
    { name: 'weekly-team-2025-03-31-Europe.pdf', content: new Uint8Array([0x25, 0x50, 0x44, 0x46, 0x2d]) },
  ],
  html: '<!doctype html><p>page</p>',
  text: '# Weekly report',
};

const listen = (server: { listen: (port: number, host: string, done: () => void) => unknown }): Promise<void> =>
  new Promise((done) => server.listen(0, '127.0.0.1', done));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'querygate-destinations-'));
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      requests.push({ url: req.url!, headers: req.headers, body });
      res.writeHead(req.url === '/gone' ? 410 : req.url === '/busy' ? 503 : 204).end();
    });
  });
  await listen(receiver);
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, done) {
      done(
        address.address.endsWith('@refused.example')
          ? Object.assign(new Error('no such user'), { responseCode: 550 })
          : undefined,
      );
    },
    onData(stream, _session, done) {
      simpleParser(stream)
        .then((mail) => mails.push(mail))
        .then(() => done(), done);
    },
  });
  await listen(smtp.server);
  smtpUrl = `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((done) => receiver.close(() => done()));
  await new Promise<void>((done) => smtp.close(() => done()));
  rmSync(dir, { recursive: true, force: true });
});

const failure = async (promise: Promise<void>): Promise<DeliveryError> => {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DeliveryError);
  return err as DeliveryError;
};

describe('a folder', () => {
  it('gets every file, whole', async () => {
    await send({ kind: 'folder', name: 'folder[0]', path: join(dir, 'out') }, PARCEL, { env: {} });
    expect(readFileSync(join(dir, 'out', 'weekly-team-2025-03-31-Europe.about.csv'), 'utf8')).toBe('field,value\r\n');
    expect([...readFileSync(join(dir, 'out', 'weekly-team-2025-03-31-Europe.pdf'))]).toEqual([
      0x25, 0x50, 0x44, 0x46, 0x2d,
    ]);
  });
});

describe('a webhook', () => {
  it('gets the answer and the files as JSON, with the idempotency key and a signature of the body', async () => {
    await send(
      { kind: 'webhook', name: 'webhook[0]', url: `${base}/json`, style: 'json', secretEnv: 'HOOK_KEY' },
      PARCEL,
      { env: { HOOK_KEY: 'shared' } },
    );
    const got = requests.find((r) => r.url === '/json')!;
    expect(got.headers['idempotency-key']).toBe('key-1');
    expect(got.headers['x-querygate-signature']).toBe(
      `sha256=${createHmac('sha256', 'shared').update(got.body).digest('hex')}`,
    );
    const body = JSON.parse(got.body) as {
      files: { name: string; content_type: string; base64: string }[];
      headlines: string[];
    };
    expect(body.headlines).toEqual(['Net revenue 1,204.50 EUR.']);
    expect(body.files.map((f) => [f.name, f.content_type])).toEqual([
      ['weekly-team-2025-03-31-Europe.html', 'text/html; charset=utf-8'],
      ['weekly-team-2025-03-31-Europe.about.csv', 'text/csv; charset=utf-8'],
      ['weekly-team-2025-03-31-Europe.pdf', 'application/pdf'],
    ]);
    expect(Buffer.from(body.files[2]!.base64, 'base64').toString()).toBe('%PDF-');
  });

  it('gets a Slack-compatible message: the title with its scope, the summary, the files named', async () => {
    await send({ kind: 'webhook', name: 'webhook[1]', url: `${base}/slack`, style: 'slack' }, PARCEL, { env: {} });
    const body = JSON.parse(requests.find((r) => r.url === '/slack')!.body) as {
      text: string;
      blocks: { type: string }[];
    };
    expect(body.text).toBe('weekly_sales_report 2025-03-24 to 2025-03-30 (region: Europe): Net revenue 1,204.50 EUR.');
    expect(body.blocks.map((b) => b.type)).toEqual(['header', 'section', 'context']);
  });

  it('that refuses for good is not retried; one that is busy, or not there, is', async () => {
    const gone = await failure(
      send({ kind: 'webhook', name: 'w', url: `${base}/gone`, style: 'json' }, PARCEL, { env: {} }),
    );
    expect([gone.message, gone.transient]).toEqual([`the webhook ${new URL(base).host} answered HTTP 410`, false]);
    const busy = await failure(
      send({ kind: 'webhook', name: 'w', url: `${base}/busy`, style: 'json' }, PARCEL, { env: {} }),
    );
    expect(busy.transient).toBe(true);
    // A port just let go: nothing listens there (port 1 would be refused by fetch itself, as a bad port).
    const closed = createServer();
    await listen(closed);
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((done) => closed.close(() => done()));
    const nobody = await failure(
      send({ kind: 'webhook', name: 'w', url: `http://127.0.0.1:${port}/x`, style: 'json' }, PARCEL, { env: {} }),
    );
    expect([nobody.message, nobody.transient]).toEqual([
      `the webhook 127.0.0.1:${port} could not be reached (ECONNREFUSED)`,
      true,
    ]);
  });
});

describe('email', () => {
  it('carries the page inline, the other files attached, and the idempotency key as its Message-ID', async () => {
    await send({ kind: 'email', name: 'email[0]', to: ['team@example.com'] }, PARCEL, {
      smtp: { url: smtpUrl, from: 'reports@example.com' },
      env: {},
    });
    const mail = mails.at(-1)!;
    expect(mail.subject).toBe('weekly_sales_report 2025-03-24 to 2025-03-30 (region: Europe)');
    expect(mail.messageId).toBe('<key-1@querygate>');
    expect(mail.html).toContain('<p>page</p>');
    expect(mail.text).toBe('# Weekly report');
    expect(mail.attachments.map((a) => a.filename)).toEqual([
      'weekly-team-2025-03-31-Europe.about.csv',
      'weekly-team-2025-03-31-Europe.pdf',
    ]);
  });

  it('refused by the server for good is not retried; a server not there is', async () => {
    const refused = await failure(
      send({ kind: 'email', name: 'e', to: ['nobody@refused.example'] }, PARCEL, {
        smtp: { url: smtpUrl, from: 'r@example.com' },
        env: {},
      }),
    );
    expect([refused.message, refused.transient]).toEqual([
      `the mail server ${new URL(smtpUrl).host} answered 550`,
      false,
    ]);
    const down = await failure(
      send({ kind: 'email', name: 'e', to: ['a@example.com'] }, PARCEL, {
        smtp: { url: 'smtp://127.0.0.1:1', from: 'r@example.com' },
        env: {},
      }),
    );
    expect(down.transient).toBe(true);
    expect(down.message).toMatch(/^the mail server 127\.0\.0\.1:1 could not be reached \(/);
  });
});
