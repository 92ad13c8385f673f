import { describe, expect, it } from 'vitest';
import { fold } from '../../src/commands/decider.ts';
import {
  individualDecider,
  partyDecider,
  type OnboardParty,
  type RegisterIndividual,
} from '../../src/commands/parties.ts';
import type { DistributorOnboarded, IndividualRegistered, MerchantOnboarded } from '../../src/domain/events.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const NOW = '2025-03-01T09:00:00.000Z';
const LATER = '2025-03-02T09:00:00.000Z';

const onboard = (data: Partial<OnboardParty['data']> = {}): OnboardParty => ({
  type: 'OnboardParty',
  data: {
    partyType: 'distributor',
    partyID: 'dist-1',
    name: 'Acme Distribution',
    shortCode: '123456',
    now: NOW,
    ...data,
  },
});

const distributorOnboarded: DistributorOnboarded = {
  type: 'DistributorOnboarded',
  data: { distributorID: 'dist-1', name: 'Acme Distribution', shortCode: '123456', onboardedAt: NOW },
};

const merchantOnboarded: MerchantOnboarded = {
  type: 'MerchantOnboarded',
  data: { merchantID: 'merch-1', name: 'Corner Shop', shortCode: '654321', onboardedAt: NOW },
};

describe('partyDecider', () => {
  const spec = deciderSpec(partyDecider);

  it('when a new distributor is onboarded, then DistributorOnboarded carries its id, name, short code and time', () => {
    spec([]).when(onboard()).then([distributorOnboarded]);
  });

  it('when a new merchant is onboarded, then MerchantOnboarded carries its id, name, short code and time', () => {
    spec([])
      .when(onboard({ partyType: 'merchant', partyID: 'merch-1', name: 'Corner Shop', shortCode: '654321' }))
      .then([merchantOnboarded]);
  });

  it('when a distributor that is already onboarded is onboarded again, then it is refused ALREADY_EXISTS', () => {
    spec([distributorOnboarded])
      .when(onboard({ now: LATER }))
      .thenRefused('ALREADY_EXISTS', /distributor dist-1 is already onboarded/);
  });

  it('when a merchant that is already onboarded is onboarded again, then it is refused ALREADY_EXISTS', () => {
    spec([merchantOnboarded])
      .when(onboard({ partyType: 'merchant', partyID: 'merch-1', name: 'Another Name', shortCode: '111', now: LATER }))
      .thenRefused('ALREADY_EXISTS', /merchant merch-1 is already onboarded/);
  });

  it('when the stream already holds an onboarding with a different name and short code, then it is still refused ALREADY_EXISTS', () => {
    spec([distributorOnboarded])
      .when(onboard({ name: 'Renamed', shortCode: '999' }))
      .thenRefused('ALREADY_EXISTS');
  });

  it('when no event has happened, then the state is none', () => {
    expect(partyDecider.initialState()).toEqual({ status: 'none' });
  });

  it('when DistributorOnboarded is folded, then the state is an onboarded distributor', () => {
    expect(fold(partyDecider, partyDecider.initialState(), [distributorOnboarded])).toEqual({
      status: 'onboarded',
      partyType: 'distributor',
      partyID: 'dist-1',
      name: 'Acme Distribution',
      shortCode: '123456',
    });
  });

  it('when MerchantOnboarded is folded, then the state is an onboarded merchant', () => {
    expect(fold(partyDecider, partyDecider.initialState(), [merchantOnboarded])).toEqual({
      status: 'onboarded',
      partyType: 'merchant',
      partyID: 'merch-1',
      name: 'Corner Shop',
      shortCode: '654321',
    });
  });

  it('when the decided events are folded, then the state they produce refuses a second onboarding', () => {
    const events = partyDecider.decide(onboard(), partyDecider.initialState());
    const state = fold(partyDecider, partyDecider.initialState(), events);
    expect(state.status).toBe('onboarded');
    expect(() => partyDecider.decide(onboard(), state)).toThrow(expect.objectContaining({ code: 'ALREADY_EXISTS' }));
  });
});

const register = (data: Partial<RegisterIndividual['data']> = {}): RegisterIndividual => ({
  type: 'RegisterIndividual',
  data: { phone: '+2348123456781', name: 'Ada Obi', now: NOW, ...data },
});

const individualRegistered: IndividualRegistered = {
  type: 'IndividualRegistered',
  data: { phone: '+2348123456781', name: 'Ada Obi', registeredAt: NOW },
};

describe('individualDecider', () => {
  const spec = deciderSpec(individualDecider);

  it('when a new individual is registered, then IndividualRegistered carries the phone, name and time', () => {
    spec([]).when(register()).then([individualRegistered]);
  });

  it('when an individual with that phone is already registered, then registering again is refused PHONE_TAKEN', () => {
    spec([individualRegistered])
      .when(register({ name: 'Someone Else', now: LATER }))
      .thenRefused('PHONE_TAKEN', /\+2348123456781 is already registered/);
  });

  it('when registering twice is refused, then the refusal names the phone field', () => {
    const state = fold(individualDecider, individualDecider.initialState(), [individualRegistered]);
    expect(() => individualDecider.decide(register(), state)).toThrow(
      expect.objectContaining({ code: 'PHONE_TAKEN', field: 'phone' }),
    );
  });

  it('when no event has happened, then the state is none', () => {
    expect(individualDecider.initialState()).toEqual({ status: 'none' });
  });

  it('when IndividualRegistered is folded, then the state is registered with the phone and name', () => {
    expect(fold(individualDecider, individualDecider.initialState(), [individualRegistered])).toEqual({
      status: 'registered',
      phone: '+2348123456781',
      name: 'Ada Obi',
    });
  });
});
