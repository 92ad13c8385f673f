/** Who a key, a user or an operation belongs to. */
export type PartyType = 'distributor' | 'merchant';

export interface PartyRef {
  type: PartyType;
  id: string;
}

export const formatPartyRef = (party: PartyRef) => `${party.type}:${party.id}`;

export function samePartyRef(a: PartyRef | null, b: PartyRef | null): boolean {
  return a !== null && b !== null && a.type === b.type && a.id === b.id;
}
