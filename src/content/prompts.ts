/**
 * Prompts a pack offers (prompts/list, prompts/get): what a user picks to start a piece of work, such
 * as a weekly review. A prompt is data plus one builder, like a template: its arguments are a strict
 * zod object of strings (MCP passes prompt arguments as strings), validated as tool arguments are, and
 * its builder turns valid arguments into the messages, which tell the model which tools to call.
 */
import type { Prompt, PromptMessage } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { CompletionSource, ContentContext } from './declarations.js';
import { ArgumentError, ConfigError, INVALID_PARAMS, ProtocolError, type ArgumentIssue } from '../lib/errors.js';
import { outsideScope, scopeOf } from '../lib/data-scope.js';
import { quote } from '../lib/date-range.js';
import { TOOL_NAME } from '../registry/types.js';

export interface PromptTemplate<Args> {
  /** snake_case, unique among the prompts a server offers. */
  readonly name: string;
  readonly title: string;
  /** What the prompt is for, for the person choosing it. */
  readonly description: string;
  /** A strict object whose fields are strings, each with a description. */
  readonly arguments: z.ZodType<Args>;
  /**
   * Where an argument's completions come from. An argument of a closed set (a zod enum) completes
   * from its values unless another source is given here.
   */
  readonly completions?: Readonly<Record<string, CompletionSource>>;
  /** The messages for valid arguments; it may still refuse them with an ArgumentError naming the field. */
  messages(args: Args, ctx: ContentContext): readonly PromptMessage[];
}

// Prompts differ in their argument types; the engine only needs them erased.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyPrompt = PromptTemplate<any>;

export function definePrompt<Args>(prompt: PromptTemplate<Args>): PromptTemplate<Args> {
  return prompt;
}

/** A prompt as the engine serves it: its listing and each argument's completion source, derived once. */
export interface ServedPrompt {
  readonly template: AnyPrompt;
  readonly listing: Prompt;
  /** By argument name; undefined where the argument has nothing to offer. */
  readonly completions: Readonly<Record<string, CompletionSource | undefined>>;
}

/** Checks a pack's prompt and derives what prompts/list shows of it; a broken one stops the server. */
export function servePrompt(template: AnyPrompt, pack: string): ServedPrompt {
  const where = `pack ${pack}: prompt ${template.name}`;
  if (!TOOL_NAME.test(template.name)) throw new ConfigError(`${where}: name must be snake_case words`);
  if (template.title.trim() === '' || template.description.trim().length < 20) {
    throw new ConfigError(`${where}: give it a title and a description a person can choose by`);
  }
  const schema = z.toJSONSchema(template.arguments, { io: 'input', unrepresentable: 'any' }) as {
    type?: unknown;
    properties?: Record<string, { type?: unknown; enum?: unknown; description?: unknown }>;
    required?: string[];
    additionalProperties?: unknown;
  };
  if (schema.type !== 'object' || schema.additionalProperties !== false) {
    throw new ConfigError(`${where}: arguments must be a strict object (z.strictObject), so unknown ones are refused`);
  }
  const properties = Object.entries(schema.properties ?? {});
  const completions: Record<string, CompletionSource | undefined> = {};
  for (const [name, property] of properties) {
    if (property.type !== 'string')
      throw new ConfigError(`${where}: argument ${name} must be a string, as MCP passes it`);
    if (typeof property.description !== 'string')
      throw new ConfigError(`${where}: argument ${name} has no description`);
    const values = Array.isArray(property.enum) ? (property.enum as string[]) : undefined;
    completions[name] = template.completions?.[name] ?? (values ? { values } : undefined);
  }
  for (const name of Object.keys(template.completions ?? {})) {
    if (!(name in completions)) throw new ConfigError(`${where}: completions name ${name}, which is not an argument`);
  }
  return {
    template,
    completions,
    listing: {
      name: template.name,
      title: template.title,
      description: template.description,
      // A prompt argument has no schema in MCP, so its allowed values are said in its description.
      arguments: properties.map(([name, property]) => ({
        name,
        description: Array.isArray(property.enum)
          ? `${property.description as string}: one of ${property.enum.join(', ')}`
          : (property.description as string),
        required: (schema.required ?? []).includes(name),
      })),
    },
  };
}

/**
 * prompts/get: the prompt's messages for these arguments. Arguments that break a rule are refused
 * with -32602, every broken rule named with its field, as a tool call's would be; so is an argument
 * named after a dimension the caller is scoped on whose value is outside its scope.
 */
export function getPrompt(
  prompt: ServedPrompt,
  rawArgs: unknown,
  ctx: ContentContext,
): { description: string; messages: PromptMessage[] } {
  const known = prompt.listing.arguments?.map((a) => a.name) ?? [];
  const parsed = prompt.template.arguments.safeParse(rawArgs ?? {});
  try {
    if (!parsed.success) throw new ArgumentError(issuesOf(parsed.error, rawArgs, known));
    const outside = outsideScope(parsed.data, scopeOf(ctx.caller));
    if (outside.length > 0) throw new ArgumentError(outside);
    return { description: prompt.template.description, messages: [...prompt.template.messages(parsed.data, ctx)] };
  } catch (err) {
    if (!(err instanceof ArgumentError)) throw err;
    throw new ProtocolError(
      INVALID_PARAMS,
      `Invalid arguments for prompt ${prompt.template.name}: ${err.message}. Fix the arguments and ask again.`,
      { issues: err.issues },
    );
  }
}

/** zod's issues as "field: rule" pairs; every argument is a string, so few kinds of rule can break. */
function issuesOf(error: z.ZodError, rawArgs: unknown, known: readonly string[]): ArgumentIssue[] {
  return error.issues.map((issue): ArgumentIssue => {
    const field = issue.path.length > 0 ? issue.path.join('.') : 'arguments';
    if (issue.code === 'unrecognized_keys') {
      const named = issue.keys.slice(0, 5).map((k) => quote(k));
      return {
        field: named.join(', ') + (issue.keys.length > 5 ? ` and ${issue.keys.length - 5} more` : ''),
        rule: `${issue.keys.length > 1 ? 'are not arguments' : 'is not an argument'} of this prompt; its arguments are ${known.join(', ')}`,
      };
    }
    if (issue.code === 'invalid_type') {
      if (issue.path.length === 0) return { field, rule: 'arguments must be an object of strings' };
      const given = Object.hasOwn(rawArgs as object, issue.path[0]!);
      return { field, rule: given ? 'must be a string' : 'is required' };
    }
    return { field, rule: issue.message };
  });
}
