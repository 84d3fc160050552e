// The ranking of confirmation statuses lives in shared/, where the receipt verifier (which also
// runs in a browser) reads which confirmation stands; the journal's readers take it from here.
export { CONFIRMATION_STATUS_RANK, finalStatus, statusRank } from '../../shared/receipts/confirmations.ts';
