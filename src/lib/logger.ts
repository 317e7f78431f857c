/** A structured logger that writes one JSON line per event to stderr; stdout belongs to the protocol. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** The levels QUERYGATE_LOG_LEVEL may name; here, below the configuration that reads it. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function createLogger(
  level: LogLevel = 'info',
  write: (line: string) => void = (line) => process.stderr.write(line),
): Logger {
  const emit =
    (at: LogLevel) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      if (RANK[at] < RANK[level]) return;
      write(JSON.stringify({ time: new Date().toISOString(), level: at, msg, ...fields }) + '\n');
    };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

/** A logger that drops everything, for tests that do not read the log. */
export const silentLogger: Logger = createLogger('error', () => undefined);
