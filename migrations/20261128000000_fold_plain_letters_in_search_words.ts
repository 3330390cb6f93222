/**
 * Search words write letters that have no accent to drop (ł, ø, ß, æ…) as plain Latin letters
 * (PLAIN_LETTERS in src/leads/lead-search-terms.ts), so `lukasz` finds Łukasz. The words of
 * existing leads are written again by 20261128040000_keep_lead_words_on_leads, with the service's
 * own tokenizer: that code writes columns this migration's tables do not have yet.
 */
export async function up(): Promise<void> {}

/** The words stay folded: a build that does not fold finds them again after its own `leads maintenance reindex`. */
export async function down(): Promise<void> {}
