/**
 * A strict parser of Prometheus' text exposition format (version 0.0.4), written from its
 * specification rather than from prom-client, so that a scrape is checked by something other than
 * the code that wrote it. It throws, naming the line, on anything the format does not allow:
 * malformed names, labels, escapes or values, HELP or TYPE given twice or TYPE after a sample, a
 * metric's lines not in one group, duplicate series, and histograms whose buckets are not cumulative
 * or whose +Inf bucket, _sum or _count is missing or disagrees.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  /** The sample's own name: a histogram's `x_bucket`, `x_sum` and `x_count` belong to family `x`. */
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  type: MetricType;
  help?: string;
  readonly samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const FLOAT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
const TYPES: readonly string[] = ['counter', 'gauge', 'histogram', 'summary', 'untyped'];

/**
 * A value as Go's strconv.ParseFloat reads it, as the format says: a decimal float, or NaN, Inf or
 * Infinity in any case, signed or not (prom-client writes NaN as "Nan", which Prometheus accepts).
 * Go's hexadecimal floats are left out: nothing here writes them.
 */
export function parseValue(text: string): number {
  if (/^nan$/i.test(text)) return NaN;
  const infinite = /^([+-]?)inf(inity)?$/i.exec(text);
  if (infinite) return infinite[1] === '-' ? -Infinity : Infinity;
  if (!FLOAT.test(text)) throw new Error(`not a float: ${JSON.stringify(text)}`);
  return Number(text);
}

/** Undoes the escapes a HELP text may hold (\\ and \n), refusing any other. */
function unescapeHelp(text: string): string {
  return text.replace(/\\(.?)/g, (_, c: string) => {
    if (c === '\\') return '\\';
    if (c === 'n') return '\n';
    throw new Error(`bad escape in HELP: \\${c}`);
  });
}

/** The family a sample name belongs to, given the types declared so far. */
function familyOf(name: string, types: ReadonlyMap<string, MetricType>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const base = name.slice(0, -suffix.length);
    const type = types.get(base);
    if (type === 'histogram' || (type === 'summary' && suffix !== '_bucket')) return base;
  }
  return name;
}

/** Reads `name{a="x",b="y"} value [timestamp]`. */
function parseSample(line: string): Sample {
  const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
  if (!name) throw new Error('no metric name');
  let at = name.length;
  const blanks = (): void => {
    while (line[at] === ' ' || line[at] === '\t') at++;
  };
  const labels: Record<string, string> = {};
  blanks();
  let separated = at > name.length;
  if (line[at] === '{') {
    at++;
    for (;;) {
      blanks();
      if (line[at] === '}') break;
      const label = LABEL_NAME.exec(line.slice(at))?.[0];
      if (!label) throw new Error(`bad label name at column ${at + 1}`);
      if (label.startsWith('__')) throw new Error(`reserved label name ${label}`);
      if (label in labels) throw new Error(`label ${label} given twice`);
      at += label.length;
      blanks();
      if (line[at] !== '=') throw new Error(`expected = after label ${label}`);
      at++;
      blanks();
      if (line[at] !== '"') throw new Error(`expected " to open the value of label ${label}`);
      at++;
      let value = '';
      for (;;) {
        const c = line[at];
        if (c === undefined) throw new Error(`unterminated value of label ${label}`);
        at++;
        if (c === '"') break;
        if (c !== '\\') {
          value += c;
          continue;
        }
        const escaped = line[at++];
        if (escaped === '\\' || escaped === '"') value += escaped;
        else if (escaped === 'n') value += '\n';
        else throw new Error(`bad escape \\${escaped ?? ''} in label ${label}`);
      }
      labels[label] = value;
      blanks();
      if (line[at] === ',') {
        at++;
        continue;
      }
      if (line[at] !== '}') throw new Error(`expected , or } after label ${label}`);
    }
    at++;
    separated = line[at] === ' ' || line[at] === '\t';
  }
  if (!separated) throw new Error('no blank before the value');
  const rest = line
    .slice(at)
    .trim()
    .split(/[ \t]+/);
  if (rest[0] === '' || rest.length > 2) throw new Error('expected a value and an optional timestamp');
  if (rest[1] !== undefined && !/^-?\d+$/.test(rest[1])) throw new Error(`bad timestamp ${rest[1]}`);
  return { name, labels, value: parseValue(rest[0]!) };
}

const seriesKey = (sample: Sample, without?: string): string =>
  JSON.stringify([
    sample.name,
    Object.entries(sample.labels)
      .filter(([k]) => k !== without)
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  ]);

function checkHistogram(family: Family): void {
  const groups = new Map<string, { buckets: [number, number][]; sum?: number; count?: number }>();
  const groupOf = (sample: Sample): { buckets: [number, number][]; sum?: number; count?: number } => {
    const key = seriesKey({ ...sample, name: family.name }, 'le');
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { buckets: [] }));
    return group;
  };
  for (const sample of family.samples) {
    const group = groupOf(sample);
    if (sample.name === `${family.name}_bucket`) {
      const le = sample.labels.le;
      if (le === undefined) throw new Error(`${sample.name} without le`);
      group.buckets.push([parseValue(le), sample.value]);
    } else if ('le' in sample.labels) {
      throw new Error(`${sample.name} has an le label`);
    } else if (sample.name === `${family.name}_sum`) {
      group.sum = sample.value;
    } else if (sample.name === `${family.name}_count`) {
      group.count = sample.value;
    } else {
      throw new Error(`histogram ${family.name} has a sample named ${sample.name}`);
    }
  }
  for (const [key, group] of groups) {
    if (group.sum === undefined || group.count === undefined) throw new Error(`${key}: no _sum or no _count`);
    if (!Number.isInteger(group.count) || group.count < 0) throw new Error(`${key}: _count is not a count`);
    const buckets = [...group.buckets].sort(([a], [b]) => a - b);
    if (buckets.at(-1)?.[0] !== Infinity) throw new Error(`${key}: no +Inf bucket`);
    let previous = 0;
    for (const [le, count] of buckets) {
      if (!Number.isInteger(count) || count < previous) throw new Error(`${key}: bucket le=${le} is not cumulative`);
      previous = count;
    }
    if (previous !== group.count) throw new Error(`${key}: +Inf bucket ${previous} differs from _count ${group.count}`);
  }
}

/** Parses a whole exposition into its families, by name, in the order they came. */
export function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the exposition does not end with a line feed');
  const families = new Map<string, Family>();
  const types = new Map<string, MetricType>();
  const seen = new Set<string>();
  let current: Family | undefined;
  const family = (name: string): Family => {
    let found = families.get(name);
    if (!found) families.set(name, (found = { name, type: 'untyped', samples: [] }));
    return found;
  };
  text
    .slice(0, -1)
    .split('\n')
    .forEach((raw, index) => {
      const line = raw.trim();
      const where = `line ${index + 1} (${JSON.stringify(raw.slice(0, 80))})`;
      try {
        if (line === '') return;
        if (line.startsWith('#')) {
          const [, keyword, name, ...rest] = line.split(/[ \t]+/);
          if (keyword !== 'HELP' && keyword !== 'TYPE') return; // a comment
          if (name === undefined || !METRIC_NAME.test(name)) throw new Error(`bad metric name in ${keyword}`);
          const target = family(name);
          if (keyword === 'HELP') {
            if (target.help !== undefined) throw new Error(`second HELP for ${name}`);
            target.help = unescapeHelp(line.replace(/^#[ \t]+HELP[ \t]+\S+[ \t]?/, ''));
          } else {
            if (types.has(name)) throw new Error(`second TYPE for ${name}`);
            if (target.samples.length > 0) throw new Error(`TYPE for ${name} after its samples`);
            if (rest.length !== 1 || !TYPES.includes(rest[0]!)) throw new Error(`bad type ${rest.join(' ')}`);
            target.type = rest[0] as MetricType;
            types.set(name, target.type);
          }
          return;
        }
        const sample = parseSample(line);
        const owner = family(familyOf(sample.name, types));
        if (owner !== current && owner.samples.length > 0) throw new Error(`${owner.name}'s lines are not one group`);
        current = owner;
        const key = seriesKey(sample);
        if (seen.has(key)) throw new Error(`duplicate series ${key}`);
        seen.add(key);
        if (owner.type === 'counter' && !(sample.value >= 0)) throw new Error(`counter ${sample.name} is negative`);
        owner.samples.push(sample);
      } catch (err) {
        throw new Error(`${where}: ${(err as Error).message}`);
      }
    });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

/** The value of the one sample with exactly these labels, or undefined when there is none. */
export function valueOf(
  families: ReadonlyMap<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const want = seriesKey({ name, labels, value: 0 });
  for (const family of families.values()) {
    for (const sample of family.samples) if (seriesKey(sample) === want) return sample.value;
  }
  return undefined;
}

/** Every sample of this name (a family's own, or a histogram's _bucket, _sum or _count). */
export function samplesOf(families: ReadonlyMap<string, Family>, name: string): Sample[] {
  return [...families.values()].flatMap((family) => family.samples.filter((s) => s.name === name));
}
