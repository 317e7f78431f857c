/**
 * Deterministic demo data for the support desk, loaded with COPY: a seeded PRNG drives every choice,
 * so the same ticket count and the same `until` day always give the same rows. Tickets spread over the
 * 730 days up to `until`, more of them lately; response and resolution times depend on the priority
 * and the team, and a ticket whose response or resolution would fall after `until` is still waiting.
 */
import { copyInto, demoInstants, loadDemoData, pick, prng, weightedIndex } from '../../../src/db/demo-data.js';
import { ConfigError } from '../../../src/lib/errors.js';
import { parseDay } from '../../../src/lib/date-range.js';
import type { Logger } from '../../../src/lib/logger.js';
import type { Priority } from './priorities.js';

export interface SeedOptions {
  /** Number of tickets to create. */
  readonly tickets: number;
  /** Last day with tickets (YYYY-MM-DD, UTC); the data spans the 730 days up to and including it. */
  readonly until: string;
  /** Replace existing support data instead of refusing to seed a non-empty database. */
  readonly replace: boolean;
}

export interface SeedSummary {
  readonly teams: number;
  readonly agents: number;
  readonly requesters: number;
  readonly tickets: number;
}

export const DEFAULT_SEED_TICKETS = 20_000;
const SPAN_DAYS = 730;
const DAY_MS = 86_400_000;
const AGENTS_PER_TEAM = 6;
/** Solved tickets older than this are closed. */
const CLOSE_AFTER_MS = 7 * DAY_MS;

const TEAMS = ['Accounts', 'Billing', 'Enterprise', 'Onboarding', 'Shipping', 'Technical'] as const;
const TEAM_WEIGHTS = [0.14, 0.24, 0.08, 0.12, 0.17, 0.25];
/** How much slower than the desk's average each team answers and resolves. */
const TEAM_PACE = [0.8, 1.0, 0.6, 1.2, 1.5, 1.3];
const PRIORITIES: readonly Priority[] = ['low', 'normal', 'high', 'urgent'];
const PRIORITY_WEIGHTS = [0.3, 0.45, 0.2, 0.05];
/** Typical hours to a first response, and from it to the resolution, by priority. */
const RESPONSE_HOURS: Record<Priority, number> = { low: 16, normal: 6, high: 2, urgent: 0.5 };
const RESOLUTION_HOURS: Record<Priority, number> = { low: 72, normal: 40, high: 16, urgent: 4 };

const FIRST = ['Amara', 'Bruno', 'Carmen', 'Dev', 'Esther', 'Felix', 'Grace', 'Hugo', 'Ines', 'Jonas', 'Keiko', 'Liam'];
const LAST = ['Achebe', 'Brandt', 'Castillo', 'Dahl', 'Eze', 'Fontaine', 'Gupta', 'Holm', 'Ivanova', 'Jovanovic'];
const DOMAINS = ['example.com', 'example.org', 'example.net'];

/** A log-normal factor around 1: most waits near the typical one, a long tail of slow ones. */
function spread(rand: () => number): number {
  const normal = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  return Math.exp(0.8 * normal);
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** Loads the demo data through an admin connection, in one transaction. */
export async function seedSupportDesk(adminUrl: string, options: SeedOptions, logger: Logger): Promise<SeedSummary> {
  if (!Number.isInteger(options.tickets) || options.tickets < 1) {
    throw new ConfigError('--count: must be a positive whole number');
  }
  if (!parseDay(options.until)) throw new ConfigError(`--until: ${options.until} is not a real YYYY-MM-DD day`);
  const end = Date.parse(`${options.until}T00:00:00Z`) + DAY_MS;
  const start = end - SPAN_DAYS * DAY_MS;
  const started = performance.now();
  const rand = prng(0x5eed_d35c ^ options.tickets);
  const requesterCount = Math.max(50, Math.floor(options.tickets / 4));
  const agentCount = TEAMS.length * AGENTS_PER_TEAM;

  // Creation times first, sorted, so that ticket ids grow with time; more tickets lately.
  const times = demoInstants(rand, options.tickets, start, end);

  const tables = ['support.teams', 'support.agents', 'support.requesters', 'support.tickets'];
  await loadDemoData(adminUrl, { serial: tables, analyze: tables }, async (client) => {
    if (options.replace) {
      await client.query(
        'truncate support.tickets, support.requesters, support.agents, support.teams restart identity',
      );
    } else {
      const { rows } = await client.query<{ n: string }>('select count(*) as n from support.tickets');
      if (rows[0]!.n !== '0') {
        throw new ConfigError('the database already holds tickets; pass --replace to replace them with demo data');
      }
    }
    await client.query('set local synchronous_commit = off');

    await copyInto(client, 'copy support.teams (id, name) from stdin', function* () {
      for (const [i, name] of TEAMS.entries()) yield `${i + 1}\t${name}\n`;
    });
    await copyInto(client, 'copy support.agents (id, team_id, name, email) from stdin', function* () {
      for (let id = 1; id <= agentCount; id++) {
        const [first, last] = [pick(rand, FIRST), pick(rand, LAST)];
        const email = `${first}.${last}@support.example.com`.toLowerCase();
        yield `${id}\t${Math.ceil(id / AGENTS_PER_TEAM)}\t${first} ${last}\t${email}\n`;
      }
    });
    await copyInto(client, 'copy support.requesters (id, name, email, phone, created_at) from stdin', function* () {
      for (let id = 1; id <= requesterCount; id++) {
        const [first, last] = [pick(rand, FIRST), pick(rand, LAST)];
        const email = `${first}.${last}${id}@${pick(rand, DOMAINS)}`.toLowerCase();
        const phone = `+44 20 7946 ${String(Math.floor(rand() * 10000)).padStart(4, '0')}`;
        yield `${id}\t${first} ${last}\t${email}\t${phone}\t${iso(start - Math.floor(rand() * 365) * DAY_MS)}\n`;
      }
    });

    await copyInto(
      client,
      'copy support.tickets (id, requester_id, team_id, agent_id, priority, status, created_at, first_response_at, resolved_at) from stdin',
      function* () {
        for (let i = 0; i < times.length; i++) {
          const created = times[i]!;
          const team = weightedIndex(rand, TEAM_WEIGHTS);
          const priority = PRIORITIES[weightedIndex(rand, PRIORITY_WEIGHTS)]!;
          const requester = 1 + Math.floor(rand() * requesterCount);
          const agent = team * AGENTS_PER_TEAM + 1 + Math.floor(rand() * AGENTS_PER_TEAM);
          const pace = TEAM_PACE[team]!;
          const responded = created + Math.round(RESPONSE_HOURS[priority] * pace * spread(rand) * 3600) * 1000;
          const resolved = responded + Math.round(RESOLUTION_HOURS[priority] * pace * spread(rand) * 3600) * 1000;
          let row: [agent: string, status: string, response: string, resolution: string];
          if (responded >= end) row = ['\\N', 'open', '\\N', '\\N'];
          else if (resolved >= end) row = [String(agent), 'pending', iso(responded), '\\N'];
          else {
            const status = end - resolved > CLOSE_AFTER_MS ? 'closed' : 'solved';
            row = [String(agent), status, iso(responded), iso(resolved)];
          }
          const [agentId, status, response, resolution] = row;
          yield `${i + 1}\t${requester}\t${team + 1}\t${agentId}\t${priority}\t${status}\t${iso(created)}\t${response}\t${resolution}\n`;
        }
      },
    );
  });

  const summary = { teams: TEAMS.length, agents: agentCount, requesters: requesterCount, tickets: options.tickets };
  logger.info('seeded demo data', {
    pack: 'support_desk',
    ...summary,
    until: options.until,
    seconds: Math.round(performance.now() - started) / 1000,
  });
  return summary;
}
