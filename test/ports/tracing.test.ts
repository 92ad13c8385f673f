import { describe, expect, it } from 'vitest';
import { noTracing, validTraceparent, withTraceparent } from '../../src/ports/tracing.ts';

const VALID = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('traceparent', () => {
  it('when a W3C traceparent of version 00 is given, then it is kept as it is', () => {
    expect(validTraceparent(VALID)).toBe(VALID);
    expect(validTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')).toBeDefined();
  });

  it.each([
    ['another version', '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'],
    ['the invalid version ff', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'],
    ['an all-zero trace id', '00-00000000000000000000000000000000-00f067aa0ba902b7-01'],
    ['an all-zero parent id', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'],
    ['upper-case hex', '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01'],
    ['a short trace id', '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01'],
    ['a long parent id', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7a-01'],
    ['one-digit flags', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1'],
    ['trailing data', `${VALID}-extra`],
    ['surrounding space', ` ${VALID}`],
    ['a non-hex character', '00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01'],
    ['an empty value', ''],
  ])('when it has %s, then it is dropped', (_what, value) => {
    expect(validTraceparent(value)).toBeUndefined();
  });

  it('when tracing is off, then a span passes on the valid traceparent it continues, and drops an invalid one', async () => {
    expect(await noTracing.span('step', { parent: VALID }, async (span) => span.traceparent)).toBe(VALID);
    expect(await noTracing.span('step', { parent: 'garbage' }, async (span) => span.traceparent)).toBeUndefined();
    expect(await noTracing.span('step', {}, async (span) => span.traceparent)).toBeUndefined();
  });

  it('when a command context gets a traceparent, then it carries it; given none, then the key is left out', () => {
    expect(withTraceparent({ actor: 'a', correlationId: 'c' }, VALID)).toEqual({
      actor: 'a',
      correlationId: 'c',
      traceparent: VALID,
    });
    expect(Object.keys(withTraceparent({ actor: 'a', correlationId: 'c', traceparent: VALID }, undefined))).toEqual([
      'actor',
      'correlationId',
    ]);
  });
});
