import { html, type Html } from '../http/html.ts';

/**
 * The human-readable API reference at /api/v1/docs: rendered on the server from the OpenAPI document, with
 * the same escaping template as the console, no script and no external resource.
 */

type Obj = Record<string, unknown>;
const obj = (value: unknown): Obj =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Obj) : {};
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string =>
  typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
const refName = (value: unknown): string | null =>
  typeof value === 'string' ? (value.split('/').at(-1) ?? null) : null;

/** Backticks in descriptions become <code>. */
const prose = (value: unknown) =>
  text(value)
    .split('\n\n')
    .filter(Boolean)
    .map(
      (paragraph) =>
        html`<p>${paragraph.split(/`([^`]*)`/).map((part, i) => (i % 2 ? html`<code>${part}</code>` : part))}</p>`,
    );

function typeOf(schema: Obj): Html {
  const target = refName(schema.$ref);
  if (target) return html`<a href="#schema-${target}">${target}</a>`;
  if (schema.const !== undefined) return html`<code>${JSON.stringify(schema.const)}</code>`;
  if (Array.isArray(schema.enum))
    return html`one of ${schema.enum.map((v, i) => html`${i ? ', ' : ''}<code>${JSON.stringify(v)}</code>`)}`;
  const variants = list(schema.anyOf ?? schema.oneOf);
  if (variants.length) return html`${variants.map((v, i) => html`${i ? ' or ' : ''}${typeOf(obj(v))}`)}`;
  if (schema.type === 'array') return html`array of ${typeOf(obj(schema.items))}`;
  return html`${Array.isArray(schema.type) ? schema.type.join(' or ') : text(schema.type) || 'any'}`;
}

function constraints(schema: Obj): string {
  const variant =
    list(schema.anyOf)
      .map(obj)
      .find((v) => v.type !== 'null') ?? schema;
  const parts = [
    variant.pattern !== undefined ? `pattern ${text(variant.pattern)}` : '',
    variant.maxLength !== undefined ? `at most ${text(variant.maxLength)} characters` : '',
    variant.example !== undefined ? `e.g. ${text(variant.example)}` : '',
  ];
  return parts.filter(Boolean).join('; ');
}

function fieldsTable(schema: Obj): Html {
  const required = new Set(list(schema.required).map(String));
  const rows = Object.entries(obj(schema.properties)).map(([name, value]) => {
    const property = obj(value);
    const description = text(
      property.description ??
        list(property.anyOf)
          .map(obj)
          .find((v) => v.description)?.description,
    );
    return html`<tr><td><code>${name}</code></td><td>${typeOf(property)}</td>
      <td>${required.has(name) ? 'yes' : 'no'}</td>
      <td>${description}${
        constraints(property) ? html` <span class="muted">(${constraints(property)})</span>` : ''
      }</td></tr>`;
  });
  return html`<table><tr><th>field</th><th>type</th><th>required</th><th>notes</th></tr>${rows}</table>
    ${schema.additionalProperties === false ? html`<p class="muted">No other fields.</p>` : ''}`;
}

function examplesOf(media: Obj): Html[] {
  return Object.entries(obj(media.examples)).map(([name, example]) => {
    const { summary, value } = obj(example);
    return html`<details><summary>Example: ${text(summary) || name}</summary>
      <pre>${JSON.stringify(value, null, 2)}</pre></details>`;
  });
}

function operationSection(path: string, method: string, operation: Obj): Html {
  const parameters = list(operation.parameters).map(obj);
  const body = obj(operation.requestBody);
  const bodyMedia = obj(obj(body.content)['application/json']);
  const responses = Object.entries(obj(operation.responses)).map(([status, response]) => {
    const r = obj(response);
    const [mediaType, media] = Object.entries(obj(r.content))[0] ?? ['', {}];
    const headers = Object.entries(obj(r.headers)).map(
      ([name, h]) => html`<br><span class="muted">header <code>${name}</code>: ${text(obj(h).description)}</span>`,
    );
    return html`<tr><td><b>${status}</b></td><td>${prose(r.description)}${headers}</td>
      <td>${
        mediaType ? html`${typeOf(obj(obj(media).schema))} <span class="muted">${mediaType}</span>` : ''
      }${examplesOf(obj(media))}</td></tr>`;
  });
  return html`<section id="${text(operation.operationId)}">
<h2><span class="method ${method}">${method.toUpperCase()}</span> <code>${path}</code></h2>
<p><b>${text(operation.summary)}</b>. Permission: ${text(operation['x-permission'])}.</p>${prose(operation.description)}
${
  parameters.length
    ? html`<h3>Parameters</h3><table><tr><th>name</th><th>in</th><th>required</th><th>type</th><th>notes</th></tr>
      ${parameters.map(
        (p) => html`<tr><td><code>${text(p.name)}</code></td><td>${text(p.in)}</td>
      <td>${p.required ? 'yes' : 'no'}</td><td>${typeOf(obj(p.schema))}</td>
      <td>${text(p.description)}${
        constraints(obj(p.schema)) ? html` <span class="muted">(${constraints(obj(p.schema))})</span>` : ''
      }</td></tr>`,
      )}</table>`
    : ''
}
${
  operation.requestBody
    ? html`<h3>Request body</h3>${prose(body.description)}<p>One of: ${typeOf(obj(bodyMedia.schema))}</p>
      ${examplesOf(bodyMedia)}`
    : ''
}
<h3>Responses</h3><table><tr><th>status</th><th>when</th><th>body</th></tr>${responses}</table>
</section>`;
}

/** A self-contained page (no script, no external resource) describing the document, rendered on the server. */
export function renderDocsPage(document: unknown): string {
  const doc = obj(document);
  const info = obj(doc.info);
  const operations = Object.entries(obj(doc.paths)).flatMap(([path, item]) =>
    Object.entries(obj(item)).map(([method, operation]) => ({ path, method, operation: obj(operation) })),
  );
  const schemes = Object.entries(obj(obj(doc.components).securitySchemes));
  const schemas = Object.entries(obj(obj(doc.components).schemas)).map(([name, schema]) => {
    const s = obj(schema);
    return html`<section id="schema-${name}"><h3>${name}</h3>
      ${prose(s.description)}${s.type === 'object' ? fieldsTable(s) : html`<p>${typeOf(s)}</p>`}</section>`;
  });
  const page = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${text(info.title)}</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
td,th{border:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f7}code,pre{font:13px ui-monospace,monospace}pre{background:#f5f5f7;padding:.5rem;overflow:auto}
.method{display:inline-block;min-width:3.5rem;text-align:center;color:#fff;border-radius:4px;padding:0 .3rem}
.get{background:#1f6feb}.post{background:#2da44e}
.muted{color:#666}section{border-top:1px solid #ddd;margin-top:1.5rem}
</style></head><body>
<h1>${text(info.title)} <span class="muted">${text(info.version)}</span></h1>${prose(info.description)}
<p>Machine-readable: <a href="openapi.json">openapi.json</a> (OpenAPI ${text(doc.openapi)}).</p>
<h2>Authentication</h2>
${schemes.map(
  ([name, scheme]) =>
    html`<p>
      <b>${name}</b>: ${text(obj(scheme).type)} ${text(obj(scheme).scheme)}, format <code>${text(
        obj(scheme).bearerFormat,
      )}</code>.</p>${prose(obj(scheme).description)}`,
)}
<h2>Endpoints</h2><ul>
${operations.map(
  ({ path, method, operation }) =>
    html`<li>
      <a href="#${text(operation.operationId)}">${method.toUpperCase()} ${path}</a>: ${text(operation.summary)}</li>`,
)}</ul>
${operations.map(({ path, method, operation }) => operationSection(path, method, operation))}
<section><h2>Schemas</h2>${schemas}</section>
</body></html>
`;
  return page.value;
}
