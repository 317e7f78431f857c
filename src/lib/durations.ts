/** A length of time as an operator writes one in a command line or the configuration file: 90m, 36h, 2d. */

const UNIT_MS: Readonly<Record<string, number>> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The rule a duration breaks, after the text that breaks it. */
export const DURATION_RULE = 'is not a duration; give minutes, hours or days, such as 90m, 36h or 2d';

/** Milliseconds of a whole number of minutes, hours or days ("36h"), or undefined for anything else. */
export function durationMs(text: string): number | undefined {
  const match = /^([1-9][0-9]{0,4})([mhd])$/.exec(text);
  return match ? Number(match[1]) * UNIT_MS[match[2]!]! : undefined;
}

/** A duration as a person reads it: "36 hours", "2 days", "90 minutes", "1 day". */
export function describeDuration(ms: number): string {
  const [count, unit] =
    ms % UNIT_MS.d! === 0
      ? [ms / UNIT_MS.d!, 'day']
      : ms % UNIT_MS.h! === 0
        ? [ms / UNIT_MS.h!, 'hour']
        : [ms / UNIT_MS.m!, 'minute'];
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}
