/** The soak's HTTP client of the API: never throws; a missing answer (API down, timeout) is status null. */
export interface Answer {
  status: number | null;
  body: any;
  /** Why there was no answer (connection refused, timeout…). */
  error?: string;
}

export async function request(
  baseUrl: string,
  method: 'GET' | 'POST',
  path: string,
  apiKey: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${apiKey}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  try {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, body: parsed };
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    const code = (cause as { code?: string }).code;
    return { status: null, body: undefined, error: code ?? (cause instanceof Error ? cause.name : String(cause)) };
  }
}

/** `403 /problems/insufficient-balance`, `503`, `ECONNREFUSED`: how answers are counted. */
export function answerLabel(answer: Answer): string {
  if (answer.status === null) return answer.error ?? 'no answer';
  const type =
    answer.body && typeof answer.body === 'object' && typeof answer.body.type === 'string'
      ? ` ${answer.body.type}`
      : '';
  return `${answer.status}${type}`;
}

export const balancePath = (party: { kind: string; id: string }) => `/api/v1/${party.kind}s/${party.id}/balance`;
export const operationsPath = (party: { kind: string; id: string }) => `/api/v1/${party.kind}s/${party.id}/operations`;
