/**
 * Completions (completion/complete): the values an argument may take that begin with what was typed.
 * MCP defines references to prompts and resource templates; querygate has neither yet, so it also
 * takes `{"type": "ref/tool", "name": TOOL}` (an extension of its own) and completes a tool's
 * enum-valued arguments from the tool's input schema: group_by, status and the like. A tool outside
 * the caller's toolset is as unknown here as it is to tools/call.
 */
import { INVALID_PARAMS, ProtocolError } from '../../errors.js';
import type { Feature } from '../dispatcher.js';
import { isObject } from '../json-rpc.js';

/** MCP's limit on the values of one completion. */
const MAX_VALUES = 100;

const invalid = (message: string): ProtocolError => new ProtocolError(INVALID_PARAMS, `Invalid params: ${message}`);

export const completionsFeature: Feature = {
  capabilities: { completions: {} },
  methods: {
    'completion/complete': {
      eras: ['legacy', 'modern'],
      handle: (params, { deps, caller }) => {
        const { ref, argument } = params;
        if (!isObject(ref) || typeof ref.type !== 'string') throw invalid('ref must be an object with a type');
        if (!isObject(argument) || typeof argument.name !== 'string' || typeof argument.value !== 'string') {
          throw invalid('argument must be an object with a string name and value');
        }
        if (ref.type === 'ref/prompt') {
          throw new ProtocolError(INVALID_PARAMS, `Unknown prompt: ${JSON.stringify(String(ref.name).slice(0, 100))}`);
        }
        if (ref.type === 'ref/resource') {
          throw new ProtocolError(
            INVALID_PARAMS,
            `Unknown resource template: ${JSON.stringify(String(ref.uri).slice(0, 200))}`,
          );
        }
        if (ref.type !== 'ref/tool') throw invalid('ref.type must be ref/prompt, ref/resource or ref/tool');
        const tool = deps.registry.toolsFor(caller).find((t) => t.name === ref.name);
        if (!tool)
          throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${JSON.stringify(String(ref.name).slice(0, 100))}`);
        const property = (tool.inputSchema.properties as Record<string, unknown> | undefined)?.[argument.name];
        if (!isObject(property)) {
          throw new ProtocolError(
            INVALID_PARAMS,
            `Unknown argument: ${tool.name} has no argument ${JSON.stringify(argument.name.slice(0, 100))}`,
          );
        }
        const typed = argument.value.toLowerCase();
        const matching = choicesOf(property).filter((value) => value.toLowerCase().startsWith(typed));
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
