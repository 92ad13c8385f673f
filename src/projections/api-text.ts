/**
 * The list read models keep with each document its API object already serialized, in `apiText`, so that a
 * list answers with the stored texts joined: no document parsed, no object serialized on a read (issue 28).
 * It is made in evolve, so the runner, a rebuild and a replay store the same text. A document stored before the
 * field existed lacks it; the reader serializes that one itself with the same toApi (a rebuild adds it).
 */
export const API_TEXT = 'apiText';

/** The document with its contract object's JSON text, exactly as `JSON.stringify(toApi(doc))` gives it. */
export function withApiText<Doc extends object>(doc: Doc, toApi: (doc: Doc) => unknown): Doc & { apiText: string } {
  return { ...doc, apiText: JSON.stringify(toApi(doc)) };
}
