/**
 * Where a scheduled report goes: a folder, a webhook (JSON, or a Slack-compatible message), or email
 * over SMTP (nodemailer). Each send is one attempt, bounded in time, that either succeeds or throws a
 * DeliveryError saying whether a later attempt may succeed (a 5xx, a refused connection) or not (a 4xx,
 * a rejected address). Every attempt of one delivery carries the same idempotency key, so a receiver
 * that saw it already can drop a second copy.
 */
import { createHmac } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import type { Destination } from '../config-file/index.js';
import { describeScope, type DataScope } from '../lib/data-scope.js';
import { writeReportFiles, type ReportFile } from '../output/files.js';

/** How long one attempt may take. */
export const SEND_TIMEOUT_MS = 30_000;

export class DeliveryError extends Error {
  constructor(
    message: string,
    /** Whether trying again later may succeed. */
    readonly transient: boolean,
  ) {
    super(message);
  }
}

/** One delivery of one edition: what is sent, and to whom it says it comes from. */
export interface Parcel {
  readonly schedule: string;
  readonly report: string;
  readonly dueAt: Date;
  readonly edition: string;
  readonly idempotencyKey: string;
  readonly dataScope: DataScope | undefined;
  /** The report's answer, as kept in the history. */
  readonly answer: Record<string, unknown>;
  /** The files asked for, named without a folder (`weekly-2025-06-16.html`). */
  readonly files: readonly { readonly name: string; readonly content: string | Uint8Array }[];
  /** The HTML page, when the report has one: the body of an email. */
  readonly html: string | undefined;
  /** The Markdown, when the report has one: an email's plain-text part. */
  readonly text: string | undefined;
}

export interface Senders {
  readonly smtp?: { readonly url: string; readonly from: string };
  /** Environment variables by name, for the webhooks' signing keys. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  md: 'text/markdown; charset=utf-8',
  json: 'application/json',
  html: 'text/html; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  pdf: 'application/pdf',
};
const contentType = (name: string): string =>
  CONTENT_TYPES[name.slice(name.lastIndexOf('.') + 1)] ?? 'application/octet-stream';

/** The line that heads every message: the report, its range, its scope. */
export function parcelTitle(parcel: Parcel): string {
  const range =
    typeof parcel.answer.start_date === 'string' && typeof parcel.answer.end_date === 'string'
      ? ` ${parcel.answer.start_date} to ${parcel.answer.end_date}`
      : '';
  const scope = parcel.dataScope === undefined ? '' : ` (${describeScope(parcel.dataScope)})`;
  return `${parcel.report}${range}${scope}`;
}

/** The lines a message shows above the figures: the summary, then any warning or restatement. */
function headlines(parcel: Parcel): string[] {
  const { summary, stale_feed, restated } = parcel.answer as {
    summary?: unknown;
    stale_feed?: unknown;
    restated?: { text?: unknown };
  };
  return [stale_feed, restated?.text, summary].filter((line): line is string => typeof line === 'string');
}

async function toFolder(path: string, parcel: Parcel): Promise<void> {
  try {
    mkdirSync(path, { recursive: true });
  } catch (err) {
    throw new DeliveryError(`cannot make the folder ${path}: ${(err as Error).message}`, true);
  }
  const files: ReportFile[] = parcel.files.map((f) => ({ path: join(path, f.name), text: f.content }));
  try {
    await writeReportFiles(files);
  } catch (err) {
    throw new DeliveryError((err as Error).message, true);
  }
}

const base64 = (content: string | Uint8Array): string => Buffer.from(content).toString('base64');

function webhookBody(destination: Extract<Destination, { kind: 'webhook' }>, parcel: Parcel): string {
  const lines = headlines(parcel);
  if (destination.style === 'slack') {
    return JSON.stringify({
      text: `${parcelTitle(parcel)}: ${lines.join(' ')}`,
      blocks: [
        { type: 'header', text: { type: 'plain_text', text: parcelTitle(parcel).slice(0, 150) } },
        ...lines.map((line) => ({ type: 'section', text: { type: 'mrkdwn', text: line.slice(0, 3000) } })),
        {
          type: 'context',
          elements: [
            {
              type: 'mrkdwn',
              text: `edition ${parcel.edition} · files: ${parcel.files.map((f) => f.name).join(', ')}`,
            },
          ],
        },
      ],
    });
  }
  return JSON.stringify({
    schedule: parcel.schedule,
    report: parcel.report,
    due_at: parcel.dueAt.toISOString(),
    edition: parcel.edition,
    idempotency_key: parcel.idempotencyKey,
    ...(parcel.dataScope === undefined ? {} : { data_scope: parcel.dataScope }),
    headlines: lines,
    answer: parcel.answer,
    files: parcel.files.map((f) => ({ name: f.name, content_type: contentType(f.name), base64: base64(f.content) })),
  });
}

async function toWebhook(
  destination: Extract<Destination, { kind: 'webhook' }>,
  parcel: Parcel,
  senders: Senders,
): Promise<void> {
  const body = webhookBody(destination, parcel);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'idempotency-key': parcel.idempotencyKey,
    'user-agent': 'querygate-reports',
  };
  if (destination.secretEnv !== undefined) {
    const key = senders.env[destination.secretEnv] ?? '';
    headers['x-querygate-signature'] = `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
  }
  let response: Response;
  try {
    response = await fetch(destination.url, {
      method: 'POST',
      headers,
      body,
      redirect: 'error',
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    throw new DeliveryError(`the webhook ${new URL(destination.url).host} could not be reached (${cause})`, true);
  }
  await response.body?.cancel().catch(() => undefined);
  if (response.ok) return;
  // A receiver that is down or busy may take it later; one that refuses the request will refuse it again.
  const transient = response.status >= 500 || response.status === 429 || response.status === 408;
  throw new DeliveryError(`the webhook ${new URL(destination.url).host} answered HTTP ${response.status}`, transient);
}

async function byEmail(
  destination: Extract<Destination, { kind: 'email' }>,
  parcel: Parcel,
  senders: Senders,
): Promise<void> {
  if (senders.smtp === undefined) throw new DeliveryError('no smtp section in the configuration file', false);
  const url = new URL(senders.smtp.url);
  const transport = nodemailer.createTransport({
    host: url.hostname,
    port: Number(url.port || (url.protocol === 'smtps:' ? 465 : 587)),
    secure: url.protocol === 'smtps:',
    ...(url.username === ''
      ? {}
      : { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } }),
    connectionTimeout: SEND_TIMEOUT_MS,
    greetingTimeout: SEND_TIMEOUT_MS,
    socketTimeout: SEND_TIMEOUT_MS,
  });
  const host = url.host;
  try {
    await transport.sendMail({
      from: senders.smtp.from,
      to: [...destination.to],
      subject: destination.subject ?? parcelTitle(parcel),
      // One Message-ID per delivery: a mail store that sees it twice keeps it once.
      messageId: `<${parcel.idempotencyKey}@querygate>`,
      headers: { 'X-Querygate-Idempotency-Key': parcel.idempotencyKey, 'X-Querygate-Edition': parcel.edition },
      ...(parcel.html === undefined ? {} : { html: parcel.html }),
      text: parcel.text ?? headlines(parcel).join('\n\n'),
      attachments: parcel.files
        .filter((f) => !(parcel.html !== undefined && f.name.endsWith('.html')))
        .map((f) => ({ filename: f.name, content: Buffer.from(f.content), contentType: contentType(f.name) })),
    });
  } catch (err) {
    const { responseCode, code } = err as { responseCode?: number; code?: string };
    // 5xx is a permanent refusal (a rejected address, a message too big); 4xx and a lost connection pass.
    const transient = responseCode === undefined || responseCode < 500;
    throw new DeliveryError(
      `the mail server ${host} ${responseCode === undefined ? `could not be reached (${code ?? 'error'})` : `answered ${responseCode}`}`,
      transient,
    );
  } finally {
    transport.close();
  }
}

/** Sends a parcel to one destination, once: resolves when it was taken, throws a DeliveryError when not. */
export async function send(destination: Destination, parcel: Parcel, senders: Senders): Promise<void> {
  if (destination.kind === 'folder') return toFolder(destination.path, parcel);
  if (destination.kind === 'webhook') return toWebhook(destination, parcel, senders);
  return byEmail(destination, parcel, senders);
}
