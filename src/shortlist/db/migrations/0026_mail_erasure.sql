-- Personal data in inbound mail (shortlist.privacy): a message's raw bytes, envelope sender and
-- Message-ID are erased SHORTLIST_MAIL_RETENTION_DAYS after it arrived (once it was handled and
-- answered), or at once when its sender is forgotten. The row stays — company, dedup key,
-- status, reason, listing, times — as the record of what arrived and what became of it, and so
-- a redelivery of the same message is still recognised.

-- NULL, not an empty bytea, is an erased message: an empty message is one a sender can send
-- (and be told "the message is empty"), and the constraint below ties the two states together.
ALTER TABLE inbound_mail ALTER COLUMN raw DROP NOT NULL;

-- When the message's personal data was erased (NULL: it is all still there).
ALTER TABLE inbound_mail ADD COLUMN erased_at timestamptz;

-- The envelope sender was on the suppression list at delivery: it was never stored, the
-- message is not answered, and it is erased as soon as it is parsed.
ALTER TABLE inbound_mail ADD COLUMN sender_forgotten boolean NOT NULL DEFAULT false;

ALTER TABLE inbound_mail
    ADD CONSTRAINT inbound_mail_erased CHECK (
        (erased_at IS NULL) = (raw IS NOT NULL)
        AND (erased_at IS NULL OR (mail_from IS NULL AND message_id IS NULL
                                   AND status IN ('posted', 'rejected', 'failed')))
    ),
    ADD CONSTRAINT inbound_mail_forgotten_sender CHECK (NOT sender_forgotten OR mail_from IS NULL);
