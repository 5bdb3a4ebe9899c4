import type { StandardSchemaV1 } from '@standard-schema/spec';
import { MemoryError } from '../errors.ts';
import type { JsonObject } from '../storage/records.ts';
import { describe, isPlainObject } from '../storage/validate.ts';
import { compileJsonSchema, type JsonSchema } from './json-schema.ts';

/**
 * What `workingMemory.schema` accepts: any Standard Schema (Zod 3.24+/4, Valibot, ArkType, …)
 * or a plain JSON Schema object.
 */
export type SchemaSource = StandardSchemaV1 | JsonSchema;

/**
 * The outcome of validating a working-memory document. `value` is the schema's output: for a
 * Standard Schema what its `validate` returned (Zod and Valibot `object` drop unknown keys,
 * transforms and defaults apply), for a JSON Schema the document itself.
 */
export type SchemaCheck = { ok: true; value: unknown } | { ok: false; issues: string[] };

/** A schema resolved once: a validator plus the JSON Schema shown to the model. */
export interface ResolvedSchema {
  /** `'standard'` for a Standard Schema, `'json-schema'` for a plain JSON Schema object. */
  readonly kind: 'standard' | 'json-schema';
  /** The schema library (`'zod'`, `'valibot'`, `'arktype'`, …) or `'json-schema'`. */
  readonly vendor: string;
  /**
   * The document as JSON Schema (draft-07 where the library lets us choose), for tool
   * parameters and prompts. `$schema` is removed so it can be nested in another schema.
   */
  readonly jsonSchema: JsonObject;
  /**
   * Where `jsonSchema` came from: the Standard JSON Schema interface, the library's own
   * converter, the JSON Schema object itself, or `'fallback'` (`{ "type": "object" }`) when the
   * library offers no converter — validation still uses the library.
   */
  readonly jsonSchemaSource: 'standard-json-schema' | 'library' | 'json-schema' | 'fallback';
  /**
   * Validates a whole document with the schema's own validator. Synchronous when the library
   * answers synchronously (Zod, Valibot, ArkType, JSON Schema); a Promise for async schemas.
   */
  validate(value: unknown): SchemaCheck | Promise<SchemaCheck>;
}

/** True when `value` implements the Standard Schema interface (version 1). */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  const props = (value as Partial<StandardSchemaV1>)['~standard'];
  return (
    typeof props === 'object' && props !== null && props.version === 1 && typeof props.validate === 'function'
  );
}

/**
 * Resolves a schema source once: checks it, finds its JSON Schema and wraps its validator.
 *
 * For a Standard Schema the JSON Schema comes from, in order: the Standard JSON Schema
 * interface (`~standard.jsonSchema`, Zod 4.2+, ArkType 2.1.28+, Valibot through
 * `toStandardJsonSchema` of `@valibot/to-json-schema`), the library's own method (Zod's
 * `toJSONSchema()`, ArkType's `toJsonSchema()`), else `{ "type": "object" }`.
 * A plain JSON Schema is checked by engram's own validator (see `compileJsonSchema`).
 * Throws `INVALID_ARGUMENT` for anything else, or a JSON Schema that is not an object schema.
 */
export function resolveSchema(source: SchemaSource): ResolvedSchema {
  if (isStandardSchema(source)) return resolveStandard(source);
  if (isPlainObject(source)) return resolveJsonSchema(source as JsonSchema);
  throw new MemoryError(
    'INVALID_ARGUMENT',
    `workingMemory.schema must be a Standard Schema (Zod, Valibot, ArkType, …) or a JSON Schema object, got ${describe(source)}`,
  );
}

function resolveStandard(schema: StandardSchemaV1): ResolvedSchema {
  const props = schema['~standard'];
  const { jsonSchema, from } = deriveJsonSchema(schema);
  return {
    kind: 'standard',
    vendor: props.vendor,
    jsonSchema,
    jsonSchemaSource: from,
    validate(value) {
      const result = props.validate(value);
      if (isThenable(result)) return Promise.resolve(result).then(toCheck);
      return toCheck(result);
    },
  };
}

function resolveJsonSchema(schema: JsonSchema): ResolvedSchema {
  const validator = compileJsonSchema(schema);
  const type = schema.type;
  if (type !== undefined && type !== 'object' && !(Array.isArray(type) && type.includes('object'))) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `workingMemory.schema must describe an object (type "object"), got type ${JSON.stringify(type)}`,
    );
  }
  return {
    kind: 'json-schema',
    vendor: 'json-schema',
    jsonSchema: cleanJsonSchema(schema),
    jsonSchemaSource: 'json-schema',
    validate(value) {
      const issues = validator(value);
      return issues.length === 0 ? { ok: true, value } : { ok: false, issues };
    },
  };
}

type Converter = (options?: Record<string, unknown>) => unknown;

function deriveJsonSchema(schema: StandardSchemaV1): {
  jsonSchema: JsonObject;
  from: ResolvedSchema['jsonSchemaSource'];
} {
  const props = schema['~standard'] as StandardSchemaV1.Props & {
    jsonSchema?: { input?: Converter };
  };
  const attempts: [ResolvedSchema['jsonSchemaSource'], () => unknown][] = [];
  const input = props.jsonSchema?.input;
  if (typeof input === 'function') {
    attempts.push(['standard-json-schema', () => input({ target: 'draft-07' })]);
    attempts.push(['standard-json-schema', () => input({ target: 'draft-2020-12' })]);
  }
  const methods = schema as unknown as { toJSONSchema?: Converter; toJsonSchema?: Converter };
  const zodStyle = methods.toJSONSchema;
  if (typeof zodStyle === 'function') {
    attempts.push(['library', () => zodStyle.call(schema, { target: 'draft-7', io: 'input' })]);
  }
  const arkStyle = methods.toJsonSchema;
  if (typeof arkStyle === 'function') attempts.push(['library', () => arkStyle.call(schema)]);
  let lastError: unknown;
  for (const [from, attempt] of attempts) {
    try {
      const produced = attempt();
      if (isPlainObject(produced)) return { jsonSchema: cleanJsonSchema(produced), from };
    } catch (error) {
      lastError = error;
    }
  }
  if (attempts.length > 0) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `workingMemory.schema (${props.vendor}) could not be converted to JSON Schema`,
      { cause: lastError },
    );
  }
  return { jsonSchema: { type: 'object' }, from: 'fallback' };
}

/** A JSON-clean deep copy without the top-level `$schema`. */
function cleanJsonSchema(schema: Record<string, unknown>): JsonObject {
  const copy = JSON.parse(JSON.stringify(schema)) as JsonObject;
  delete copy.$schema;
  return copy;
}

function toCheck(result: StandardSchemaV1.Result<unknown>): SchemaCheck {
  if (!result.issues || result.issues.length === 0) {
    return { ok: true, value: (result as StandardSchemaV1.SuccessResult<unknown>).value };
  }
  return { ok: false, issues: result.issues.map(formatIssue) };
}

function formatIssue(issue: StandardSchemaV1.Issue): string {
  const path = (issue.path ?? [])
    .map((segment) => (typeof segment === 'object' && segment !== null ? segment.key : segment))
    .map((key) => String(key))
    .join('.');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}

function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
