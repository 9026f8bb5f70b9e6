-- Why an inbound message was not posted, beside the reason its sender reads
-- (shortlist.listings.mail.screen.RejectedAs): 'automatic' (a bounce, an auto-reply, list mail,
-- an abuse report: never posted nor answered), 'scam', 'not_a_job_post', 'incomplete' (a job
-- post without a title, a city or a company). NULL for messages rejected before this migration
-- and for every other status.
ALTER TABLE inbound_mail
    ADD COLUMN rejected_as text
        CHECK (rejected_as IN ('automatic', 'scam', 'not_a_job_post', 'incomplete')),
    ADD CONSTRAINT inbound_mail_rejected_as_only_rejected
        CHECK (rejected_as IS NULL OR status = 'rejected');
