/**
 * Completions (completion/complete): the values an argument may take that begin with what was typed.
 * For a prompt's argument or a resource template's variable, from the source its pack declares
 * (src/content/completions.ts): a closed list, the recent ISO weeks, or labels read through one of
 * the caller's tools. querygate also takes `{"type": "ref/tool", "name": TOOL}` (an extension of its
 * own) and completes a tool's enum-valued arguments from its input schema; a tool outside the
 * caller's toolset is as unknown here as it is to tools/call.
 */
import { narrow, valuesOf } from '../../content/completions.js';
import type { CompletionSource } from '../../content/declarations.js';
import { offers } from '../../content/index.js';
import { INVALID_PARAMS, ProtocolError } from '../../lib/errors.js';
import { contentFor } from '../content-context.js';
import type { Feature, HandlerContext } from '../feature.js';
import { isObject } from '../json-rpc.js';

/** MCP's limit on the values of one completion. */
const MAX_VALUES = 100;

const invalid = (message: string): ProtocolError => new ProtocolError(INVALID_PARAMS, `Invalid params: ${message}`);
const named = (value: unknown): string => JSON.stringify(String(value).slice(0, 100));

export const completionsFeature: Feature = {
  capabilities: { completions: {} },
  methods: {
    'completion/complete': {
      eras: ['legacy', 'modern'],
      handle: async (params, ctx) => {
        const { ref, argument, context } = params;
        if (!isObject(ref) || typeof ref.type !== 'string') throw invalid('ref must be an object with a type');
        if (!isObject(argument) || typeof argument.name !== 'string' || typeof argument.value !== 'string') {
          throw invalid('argument must be an object with a string name and value');
        }
        // The arguments already chosen: no source here depends on them, but a malformed one is refused.
        if (
          context !== undefined &&
          !(isObject(context) && (context.arguments === undefined || isStrings(context.arguments)))
        ) {
          throw invalid('context.arguments must be an object of strings');
        }
        const values = await candidates(ref, argument.name, ctx);
        const matching = narrow(values, argument.value);
        return {
          completion: {
            values: matching.slice(0, MAX_VALUES),
            total: matching.length,
            hasMore: matching.length > MAX_VALUES,
          },
        };
      },
    },
  },
};

/** Every value the referenced argument may take now; throws -32602 for what does not exist. */
async function candidates(
  ref: Record<string, unknown>,
  argument: string,
  ctx: HandlerContext,
): Promise<readonly string[]> {
  const { content, context } = contentFor(ctx);
  let source: CompletionSource | undefined;
  if (ref.type === 'ref/prompt') {
    const prompt = content.prompts.find((p) => p.template.name === ref.name);
    if (!prompt) throw new ProtocolError(INVALID_PARAMS, `Unknown prompt: ${named(ref.name)}`);
    if (!Object.hasOwn(prompt.completions, argument)) {
      throw new ProtocolError(
        INVALID_PARAMS,
        `Unknown argument: prompt ${prompt.template.name} has no argument ${named(argument)}`,
      );
    }
    source = prompt.completions[argument];
  } else if (ref.type === 'ref/resource') {
    const template = content.resourceTemplates.find(
      (t) => t.template.uriTemplate === ref.uri && offers(t, context.tools),
    );
    if (!template) throw new ProtocolError(INVALID_PARAMS, `Unknown resource template: ${named(ref.uri)}`);
    if (!template.variables.includes(argument)) {
      throw new ProtocolError(
        INVALID_PARAMS,
        `Unknown argument: ${template.template.uriTemplate} has no variable ${named(argument)}`,
      );
    }
    source = template.template.completions?.[argument];
  } else if (ref.type === 'ref/tool') {
    const tool = context.tools.find((t) => t.name === ref.name);
    if (!tool) throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${named(ref.name)}`);
    const property = (tool.inputSchema.properties as Record<string, unknown> | undefined)?.[argument];
    if (!isObject(property)) {
      throw new ProtocolError(INVALID_PARAMS, `Unknown argument: ${tool.name} has no argument ${named(argument)}`);
    }
    return choicesOf(property);
  } else {
    throw invalid('ref.type must be ref/prompt, ref/resource or ref/tool');
  }
  return source === undefined ? [] : valuesOf(source, context, content.labels);
}

const isStrings = (value: unknown): boolean =>
  isObject(value) && Object.values(value).every((v) => typeof v === 'string');

/** The string values a JSON Schema property allows, if it lists them; none for free-form arguments. */
function choicesOf(property: Record<string, unknown>): string[] {
  if (Array.isArray(property.enum)) return property.enum.filter((v): v is string => typeof v === 'string');
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = property[key];
    if (Array.isArray(options)) return options.filter(isObject).flatMap(choicesOf);
  }
  if (typeof property.const === 'string') return [property.const];
  return [];
}
