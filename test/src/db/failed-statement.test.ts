import {expect} from 'chai'

import {failedStatementOf, markFailedStatement, statementKind} from '../../../src/db/failed-statement.js'

describe('the kind of a failed statement', function () {
  it('names a statement by its verb and table, whatever it carries after them', function () {
    expect(statementKind('INSERT INTO `leads` (`id`, `contact_email`) VALUES (?, ?)')).to.equal('INSERT INTO leads')
    expect(statementKind("insert into `leads` (`contact_email`) values ('ada@example.org')")).to.equal('INSERT INTO leads')
    expect(statementKind('SET STATEMENT innodb_lock_wait_timeout=0 FOR INSERT INTO `idempotency_keys` (`customer_id`) VALUES (?)')).to.equal(
      'INSERT INTO idempotency_keys',
    )
    expect(statementKind('update `leads` set `status` = ? where `id` = ?')).to.equal('UPDATE leads')
    expect(statementKind('DELETE FROM lead_search_words WHERE customer_id = ?')).to.equal('DELETE FROM lead_search_words')
    expect(statementKind('(select * from `leads` FORCE INDEX (`leads_customer_id_email_normalized_index`) where `customer_id` = ? for update)')).to.equal(
      'SELECT leads',
    )
    expect(statementKind('SELECT (SELECT 1 UNION ALL (SELECT 1 FROM `customers` WHERE `id` = ?)) AS assumptions_hold')).to.equal('SELECT customers')
    expect(statementKind('START TRANSACTION')).to.equal('START TRANSACTION')
    expect(statementKind('COMMIT')).to.equal('COMMIT')
    expect(statementKind("SELECT LENGTH('secret')")).to.equal('SELECT')
    expect(statementKind("SELECT 'sent from ada' AS note FROM `leads`")).to.equal('SELECT')
  })

  it('is kept on the error, and found through the errors that wrap it', function () {
    const error = new Error('Duplicate entry')
    markFailedStatement(error, 'INSERT INTO `events` (`id`) VALUES (?)')
    expect(failedStatementOf(error)).to.equal('INSERT INTO events')
    expect(failedStatementOf(new Error('refused', {cause: error}))).to.equal('INSERT INTO events')
    expect(Object.keys(error)).to.not.include('failedStatement')
    // The first statement named stays: a retry's wrapping does not rename it.
    markFailedStatement(error, 'COMMIT')
    expect(failedStatementOf(error)).to.equal('INSERT INTO events')
    expect(failedStatementOf(new Error('no statement'))).to.equal(undefined)
  })
})
