import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

/**
 * Checks real responses against the OpenAPI document the server serves: the status must be declared for the
 * path and method, the required headers present, and the body must match the declared schema for its media
 * type. The e2e suites' HTTP helper (system.ts, `call`) runs it on every response, so a response that falls
 * outside the document fails the test that provoked it. Paths and methods the document does not describe
 * (health, console, a wrong URL) are not checked.
 */
type Json = Record<string, any>;

interface Route {
  pattern: RegExp;
  operations: Record<string, Json>;
}

export interface ResponseValidator {
  /** Undefined when the response matches the document (or the request is not one it describes), else why not. */
  check(method: string, path: string, status: number, headers: Headers, body: unknown): string | undefined;
}

export function compileResponseValidator(document: Json): ResponseValidator {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  // A JSON Schema format checker of our own: ajv-formats is not a dependency, and date-time is the one used.
  ajv.addFormat(
    'date-time',
    (value: string) =>
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(value) && !Number.isNaN(Date.parse(value)),
  );
  // The components as one schema resource; response schemas reach them through "api#/$defs/…".
  const rewrite = (schema: unknown): Json =>
    JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"api#/$defs/'));
  ajv.addSchema({ $id: 'api', $defs: rewrite(document.components.schemas) });
  const compiled = new Map<unknown, ValidateFunction>();
  const validatorOf = (schema: unknown) => {
    let validate = compiled.get(schema);
    if (!validate) compiled.set(schema, (validate = ajv.compile(rewrite(schema))));
    return validate;
  };

  const routes: Route[] = Object.entries(document.paths as Record<string, Json>).map(([template, operations]) => ({
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    operations,
  }));

  return {
    check(method, path, status, headers, body) {
      const pathname = path.split('?')[0]!;
      const operation = routes.find((route) => route.pattern.test(pathname))?.operations[method.toLowerCase()];
      if (!operation) return undefined;
      const where = `${method.toUpperCase()} ${pathname} answered ${status}`;
      const response =
        operation.responses[String(status)] ??
        operation.responses[`${String(status)[0]}XX`] ??
        operation.responses.default;
      if (!response)
        return `${where}, a status the OpenAPI document does not declare for ${operation.operationId} (it declares ${Object.keys(operation.responses).join(', ')})`;
      for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Json>)) {
        if (header.required && !headers.has(name))
          return `${where} without the header ${name}, which the document requires`;
      }
      const contentType = headers.get('content-type')?.split(';')[0]?.trim();
      const declared = (response.content ?? {}) as Record<string, Json>;
      if (body === undefined || body === '') {
        return Object.keys(declared).length === 0
          ? undefined
          : `${where} with no body, but the document declares ${Object.keys(declared).join(', ')}`;
      }
      const media = contentType ? declared[contentType] : undefined;
      if (!media)
        return `${where} with ${contentType ?? 'no Content-Type'}, which the document does not declare (it declares ${Object.keys(declared).join(', ') || 'no body'})`;
      const validate = validatorOf(media.schema);
      if (validate(body)) return undefined;
      const errors = (validate.errors ?? []).map(
        (e) =>
          `${e.instancePath || '(body)'} ${e.message}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''}`,
      );
      return `${where} with a body outside the declared schema:\n  ${errors.slice(0, 10).join('\n  ')}\nbody: ${JSON.stringify(body).slice(0, 2000)}`;
    },
  };
}

const byBaseUrl = new Map<string, Promise<ResponseValidator>>();
/**
 * The validators compiled in this worker, by the very text of their document: most systems of a run serve the same
 * one, and compiling it again for each system took about 7 s of the suite's CPU (profiled, 2026-11-26).
 */
const byDocument = new Map<string, ResponseValidator>();

/** The validator of the document a running system serves (fetched once per system). */
export function responseValidatorOf(baseUrl: string): Promise<ResponseValidator> {
  let validator = byBaseUrl.get(baseUrl);
  if (!validator) {
    validator = fetch(`${baseUrl}/api/v1/openapi.json`).then(async (response) => {
      if (!response.ok) throw new Error(`${baseUrl} serves no OpenAPI document (${response.status})`);
      const text = await response.text();
      let compiled = byDocument.get(text);
      if (!compiled) byDocument.set(text, (compiled = compileResponseValidator(JSON.parse(text) as Json)));
      return compiled;
    });
    byBaseUrl.set(baseUrl, validator);
  }
  return validator;
}

/** Forgets the document of a system: the next response from its address fetches it again. */
export function forgetResponseValidator(baseUrl: string): void {
  byBaseUrl.delete(baseUrl);
}

/** Fails (throws) when a response of a running system falls outside the document it serves. */
export async function assertMatchesOpenApi(
  baseUrl: string,
  method: string,
  path: string,
  response: { status: number; headers: Headers; body: unknown },
): Promise<void> {
  const problem = (await responseValidatorOf(baseUrl)).check(
    method,
    path,
    response.status,
    response.headers,
    response.body,
  );
  if (problem) throw new Error(`The response does not match the OpenAPI document: ${problem}`);
}
