import type { Request, Response, Router } from 'express';
import {
  approveApiKey,
  approveApiKeyRotation,
  decideOnApiKey,
  decideOnApiKeyRotation,
  requestApiKey,
  type KeyDecision,
  type RotationDecision,
} from '../commands/back-office.ts';
import { keyKeepers } from '../commands/api-keys.ts';
import { parseKeyTerms, type KeyTermsInput } from '../domain/api-key-terms.ts';
import { vouchConflict } from '../domain/segregation.ts';
import { DomainError } from '../domain/errors.ts';
import { samePartyRef } from '../domain/parties.ts';
import { keyUsage } from '../http/key-usage.ts';
import { toPublicApiKey, type ApiKeyRecord } from '../projections/api-key-directory.ts';
import {
  ConsoleError,
  correlationId,
  field,
  fields,
  partyOf,
  requireRole,
  settled,
  viewer,
  type ConsoleServices,
  sentence,
} from './context.ts';
import {
  EMPTY_KEY_FORM,
  keysPage,
  newKeyPage,
  revokePage,
  rotatePage,
  type KeyFormValues,
  type KeyRow,
  type KeyTab,
} from './keys-pages.ts';
import { reasonFormRoutes, redirectWith, renderPage } from './render.ts';
import { emailOf } from './users.ts';

/**
 * Settings › API keys. Every action checks the viewer's role and that the key is their party's here, and
 * the back-office command checks both again (and that a checker never decides on their own request).
 */
const TABS: KeyTab[] = ['pending', 'active', 'inactive'];
const INACTIVE = ['rejected', 'withdrawn', 'revoked', 'expired'];

/** Placeholders that pass validation, put in place of a field already found wrong, to find the next one. */
const VALID_PLACEHOLDER: Record<keyof KeyTermsInput, unknown> = {
  label: 'x',
  permissions: ['read-balance'],
  maxTransactionAmount: '',
  maxDailyVolume: '',
  allowedIPs: '',
  expiresInDays: '',
};

const FIELD_NAMES: Record<string, string> = {
  maxTransactionAmount: 'the max transaction amount',
  maxDailyVolume: 'the max daily volume',
  allowedIPs: 'allowed IPs',
  expiresInDays: 'the expiry',
  label: 'the label',
};

/** The domain's message with people's words for the field names, as a sentence. */
export function humanize(message: string): string {
  const text = message.replace(
    /\b(maxTransactionAmount|maxDailyVolume|allowedIPs|expiresInDays|label)\b/g,
    (name) => FIELD_NAMES[name] ?? name,
  );
  return sentence(text);
}

/** Every field's problem at once, found by the domain's own parseKeyTerms: no rule is repeated here. */
export function keyFormErrors(input: KeyTermsInput, assetScale: number): Record<string, string> {
  const errors: Record<string, string> = {};
  let candidate: KeyTermsInput = { ...input };
  for (let i = 0; i < 6; i += 1) {
    try {
      parseKeyTerms(candidate, assetScale);
      return errors;
    } catch (error) {
      if (!(error instanceof DomainError) || !error.field || !(error.field in VALID_PLACEHOLDER) || errors[error.field])
        throw error;
      errors[error.field] = humanize(error.message);
      candidate = { ...candidate, [error.field]: VALID_PLACEHOLDER[error.field as keyof KeyTermsInput] };
    }
  }
  return errors;
}

export function keyRoutes(router: Router, services: ConsoleServices): void {
  const { directory, keyReads, clock, assetScale } = services.deps;

  /** The key, if it is the viewer's party's; anything else is "not found", so other parties' ids reveal nothing. */
  async function ownKey(res: Response, keyID: string): Promise<ApiKeyRecord> {
    const party = partyOf(res);
    let key = directory.get(keyID);
    if (!key) {
      await settled(keyReads.current()); // created a moment ago by another process
      key = directory.get(keyID);
    }
    if (!key || !samePartyRef(key.party, party)) throw new ConsoleError(404, 'There is no such API key in your party.');
    return key;
  }

  /** Read-your-writes: the directory follows the store asynchronously; the next page must show the change. */
  const settle = (written: { position: number }) => settled(keyReads.written(written.position));

  router.get('/keys', async (req, res) => {
    const party = partyOf(res);
    const { user, session } = viewer(res);
    const tab = TABS.find((t) => t === req.query.tab) ?? 'pending';
    const now = clock().toISOString();
    const rows: Record<KeyTab, KeyRow[]> = { pending: [], active: [], inactive: [] };
    for (const key of directory.listByParty(party, now).reverse()) {
      const record = directory.get(key.keyID);
      const revocationRequestedBy = key.state === 'revocation_pending' ? (record?.revocationRequestedBy ?? null) : null;
      const live = key.state === 'active' || key.state === 'revocation_pending';
      const rotation = live ? (record?.rotation ?? null) : null;
      const row: KeyRow = {
        ...key,
        requestedByEmail: await emailOf(services, key.requestedBy),
        revocationRequestedBy,
        revocationRequestedByEmail: await emailOf(services, revocationRequestedBy),
        usage: live ? await keyUsage(services.deps.readStore, key.keyID) : null,
        rotation: rotation && { ...rotation, requestedByEmail: await emailOf(services, rotation.requestedBy) },
        previousSecretValidUntil:
          live && record?.previousValidUntil && now < record.previousValidUntil ? record.previousValidUntil : null,
        viewerHoldsSecret:
          record !== undefined &&
          vouchConflict(user.userID, { maker: null, keepers: keyKeepers(record, now) }) !== null,
      };
      if (key.state === 'pending' || key.state === 'revocation_pending') rows.pending.push(row);
      if (rotation) rows.pending.push({ ...row, pendingRequest: 'rotation' });
      if (key.state === 'active' || key.state === 'revocation_pending') rows.active.push(row);
      if (INACTIVE.includes(key.state)) rows.inactive.push(row);
    }
    const view = {
      tab,
      rows,
      userID: user.userID,
      maker: user.roles.includes('maker'),
      checker: user.roles.includes('checker'),
      session,
      assetCode: services.deps.assetCode ?? 'NGN',
    };
    await renderPage(services, res, { title: 'API keys', section: 'keys', body: keysPage(view) });
  });

  router.get('/keys/new', async (_req, res) => {
    requireRole(res, 'maker');
    await renderPage(services, res, {
      title: 'New API key',
      section: 'keys',
      body: newKeyPage(viewer(res).session, EMPTY_KEY_FORM, {}),
    });
  });

  router.post('/keys', async (req, res) => {
    requireRole(res, 'maker');
    const values: KeyFormValues = {
      label: field(req, 'label') ?? '',
      permissions: fields(req, 'permissions'),
      maxTransactionAmount: (field(req, 'maxTransactionAmount') ?? '').trim(),
      maxDailyVolume: (field(req, 'maxDailyVolume') ?? '').trim(),
      allowedIPs: field(req, 'allowedIPs') ?? '',
      expiresInDays: (field(req, 'expiresInDays') ?? '').trim(),
    };
    const input: KeyTermsInput = { ...values };
    const errors = keyFormErrors(input, assetScale);
    if (Object.keys(errors).length > 0) {
      return renderPage(services, res, {
        title: 'New API key',
        section: 'keys',
        status: 400,
        body: newKeyPage(viewer(res).session, values, errors),
      });
    }
    const requested = await requestApiKey(services.backOffice, viewer(res).user, input, correlationId(res));
    await settle(requested);
    await redirectWith(services, res, '/console/keys?tab=pending', {
      kind: 'ok',
      text: `Key “${values.label.trim()}” requested (${requested.keyID}). A checker of your party approves it.`,
    });
  });

  router.post('/keys/:keyID/approve', async (req, res) => {
    requireRole(res, 'checker');
    const key = await ownKey(res, String(req.params.keyID));
    // The secret is held for the maker, once; the checker who approved never sees it.
    await settle(await approveApiKey(services.backOffice, viewer(res).user, key.keyID, correlationId(res)));
    const maker = await emailOf(services, key.requestedBy);
    await redirectWith(services, res, '/console/keys?tab=active', {
      kind: 'ok',
      text: `Key “${key.label}” approved. ${maker} will see it once, on their next page in the console.`,
    });
  });

  const decision = (
    path: string,
    role: 'maker' | 'checker',
    make: (req: Request) => KeyDecision,
    done: (label: string) => string,
    tab: KeyTab,
  ) =>
    router.post(`/keys/:keyID/${path}`, async (req, res) => {
      requireRole(res, role);
      const key = await ownKey(res, String(req.params.keyID));
      await settle(
        await decideOnApiKey(services.backOffice, viewer(res).user, key.keyID, make(req), correlationId(res)),
      );
      await redirectWith(services, res, `/console/keys?tab=${tab}`, { kind: 'ok', text: done(key.label) });
    });
  const optionalReason = (req: Request) => {
    const reason = (field(req, 'reason') ?? '').trim();
    return reason === '' ? null : reason;
  };
  decision(
    'reject',
    'checker',
    (req) => ({ type: 'RejectApiKey', reason: optionalReason(req) }),
    (l) => `Key request “${l}” rejected.`,
    'inactive',
  );
  decision(
    'withdraw',
    'maker',
    () => ({ type: 'WithdrawApiKeyRequest' }),
    (l) => `Key request “${l}” withdrawn.`,
    'inactive',
  );
  decision(
    'revocation/approve',
    'checker',
    () => ({ type: 'ApproveApiKeyRevocation' }),
    (l) => `Key “${l}” revoked. It no longer works.`,
    'inactive',
  );
  decision(
    'revocation/reject',
    'checker',
    (req) => ({ type: 'RejectApiKeyRevocation', reason: optionalReason(req) }),
    (l) => `Revocation of “${l}” rejected: the key stays active.`,
    'active',
  );

  router.post('/keys/:keyID/rotation/approve', async (req, res) => {
    requireRole(res, 'checker');
    const key = await ownKey(res, String(req.params.keyID));
    // Like an approval: the new secret is held for the maker who asked for the rotation; the checker never sees it.
    const { heldFor, previousValidUntil, position } = await approveApiKeyRotation(
      services.backOffice,
      viewer(res).user,
      key.keyID,
      correlationId(res),
    );
    await settle({ position });
    await redirectWith(services, res, '/console/keys?tab=active', {
      kind: 'ok',
      text:
        `Secret of “${key.label}” rotated. ${await emailOf(services, heldFor)} will see the new key once, on ` +
        `their next page in the console; the previous secret works until ${previousValidUntil}.`,
    });
  });

  const rotationDecision = (
    path: string,
    role: 'maker' | 'checker',
    make: (req: Request) => RotationDecision,
    done: (label: string) => string,
  ) =>
    router.post(`/keys/:keyID/rotation/${path}`, async (req, res) => {
      requireRole(res, role);
      const key = await ownKey(res, String(req.params.keyID));
      const decided = await decideOnApiKeyRotation(
        services.backOffice,
        viewer(res).user,
        key.keyID,
        make(req),
        correlationId(res),
      );
      await settle(decided);
      await redirectWith(services, res, '/console/keys?tab=active', { kind: 'ok', text: done(key.label) });
    });
  rotationDecision(
    'reject',
    'checker',
    (req) => ({ type: 'reject', reason: optionalReason(req) }),
    (l) => `Rotation of “${l}” rejected: the key keeps its secret.`,
  );
  rotationDecision(
    'withdraw',
    'maker',
    () => ({ type: 'withdraw' }),
    (l) => `Rotation of “${l}” withdrawn.`,
  );

  const makersKey = (req: Request, res: Response) => {
    requireRole(res, 'maker');
    return ownKey(res, String(req.params.keyID));
  };
  const publicKey = (key: ApiKeyRecord) => toPublicApiKey(key, clock().toISOString());
  reasonFormRoutes(router, services, {
    path: '/keys/:keyID/rotate',
    title: 'Rotate secret',
    section: 'keys',
    load: makersKey,
    page: (session, key, error) => rotatePage(session, publicKey(key), error),
    words: humanize,
    submit: async (req, res, key) => {
      const request = { type: 'request', reason: field(req, 'reason') } as const;
      await settle(
        await decideOnApiKeyRotation(services.backOffice, viewer(res).user, key.keyID, request, correlationId(res)),
      );
      return {
        location: '/console/keys?tab=pending',
        text: `Rotation of the secret of “${key.label}” requested. A checker of your party approves it.`,
      };
    },
  });
  reasonFormRoutes(router, services, {
    path: '/keys/:keyID/revoke',
    title: 'Request revocation',
    section: 'keys',
    load: makersKey,
    page: (session, key, error) => revokePage(session, publicKey(key), error),
    words: humanize,
    submit: async (req, res, key) => {
      const request = { type: 'RequestApiKeyRevocation', reason: field(req, 'reason') } as const;
      await settle(await decideOnApiKey(services.backOffice, viewer(res).user, key.keyID, request, correlationId(res)));
      return {
        location: '/console/keys?tab=pending',
        text: `Revocation of “${key.label}” requested. A checker of your party approves it.`,
      };
    },
  });
}
