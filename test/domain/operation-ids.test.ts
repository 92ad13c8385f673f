import { describe, expect, it } from 'vitest';
import { isOperationID, newOperationID } from '../../src/domain/operation-ids.ts';

describe('operation ids', () => {
  it('when a new id is made, then it is op_ and 32 lowercase hex digits, and another differs', () => {
    const id = newOperationID();
    expect(id).toMatch(/^op_[0-9a-f]{32}$/);
    expect(isOperationID(id)).toBe(true);
    expect(newOperationID()).not.toBe(id);
  });

  it.each([
    ['no prefix', '3f1c9a0e5b7d4c2a9e8f7a6b5c4d3e2f'],
    ['upper-case hex', 'op_3F1C9A0E5B7D4C2A9E8F7A6B5C4D3E2F'],
    ['one digit short', 'op_3f1c9a0e5b7d4c2a9e8f7a6b5c4d3e2'],
    ['one digit more', 'op_3f1c9a0e5b7d4c2a9e8f7a6b5c4d3e2f0'],
    ['a wallet operation id', 'wo_3f1c9a0e5b7d4c2a9e8f7a6b5c4d3e2f'],
    ['a trailing line break', 'op_3f1c9a0e5b7d4c2a9e8f7a6b5c4d3e2f\n'],
  ])('when it has %s, then it is not an operation id', (_, value) => {
    expect(isOperationID(value)).toBe(false);
  });
});
