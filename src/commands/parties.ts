import type { DistributorOnboarded, IndividualRegistered, MerchantOnboarded } from '../domain/events.ts';
import { DomainError } from '../domain/errors.ts';
import type { PartyType } from '../domain/parties.ts';
import type { Decider } from './decider.ts';

// Distributors and merchants: a party is onboarded once, with a name and a short code unique for its type
// (the handler claims the short code in the same atomic append).
export type OnboardParty = {
  type: 'OnboardParty';
  data: { partyType: PartyType; partyID: string; name: string; shortCode: string; now: string };
};

export type PartyState =
  { status: 'none' } | { status: 'onboarded'; partyType: PartyType; partyID: string; name: string; shortCode: string };

type PartyOnboarded = DistributorOnboarded | MerchantOnboarded;

export const partyDecider: Decider<OnboardParty, PartyState, PartyOnboarded> = {
  initialState: () => ({ status: 'none' }),
  decide(command, state) {
    const { partyType, partyID, name, shortCode, now } = command.data;
    if (state.status !== 'none')
      throw new DomainError('ALREADY_EXISTS', `${partyType} ${partyID} is already onboarded`);
    return partyType === 'distributor'
      ? [{ type: 'DistributorOnboarded', data: { distributorID: partyID, name, shortCode, onboardedAt: now } }]
      : [{ type: 'MerchantOnboarded', data: { merchantID: partyID, name, shortCode, onboardedAt: now } }];
  },
  evolve(_state, event) {
    switch (event.type) {
      case 'DistributorOnboarded':
        return {
          status: 'onboarded',
          partyType: 'distributor',
          partyID: event.data.distributorID,
          name: event.data.name,
          shortCode: event.data.shortCode,
        };
      case 'MerchantOnboarded':
        return {
          status: 'onboarded',
          partyType: 'merchant',
          partyID: event.data.merchantID,
          name: event.data.name,
          shortCode: event.data.shortCode,
        };
    }
  },
};

// Individuals: identified by their phone (E.164), registered once.
export type RegisterIndividual = { type: 'RegisterIndividual'; data: { phone: string; name: string; now: string } };
export type IndividualState = { status: 'none' } | { status: 'registered'; phone: string; name: string };

export const individualDecider: Decider<RegisterIndividual, IndividualState, IndividualRegistered> = {
  initialState: () => ({ status: 'none' }),
  decide(command, state) {
    const { phone, name, now } = command.data;
    if (state.status !== 'none')
      throw new DomainError('PHONE_TAKEN', `an individual with phone ${phone} is already registered`, 'phone');
    return [{ type: 'IndividualRegistered', data: { phone, name, registeredAt: now } }];
  },
  evolve(_state, event) {
    return { status: 'registered', phone: event.data.phone, name: event.data.name };
  },
};
