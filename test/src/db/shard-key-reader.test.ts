import {expect} from 'chai'

import {unpinnedTables} from '../../helpers/shard-key.js'
import {normalizeSql} from '../../helpers/sql-recorder.js'

const keys = new Map([
  ['leads', 'customer_id'],
  ['lead_search_words', 'customer_id'],
  ['deliveries', 'customer_id'],
  ['events', 'customer_id'],
  ['customers', 'id'],
  ['delivery_attempts', 'delivery_id'],
])

const tables = (sql: string) => unpinnedTables(sql, keys).map((each) => each.table)

describe('the sharding check\u2019s statement reader (test/helpers/shard-key.ts)', function () {
  it('passes a read, update or delete whose WHERE names the customer, and fails one that does not', function () {
    expect(tables('select * from `leads` where `customer_id` = ? and `id` = ?')).to.deep.equal([])
    expect(tables('update `leads` set `status` = ? where `customer_id` = ? and `id` in (?, …)')).to.deep.equal([])
    expect(tables('delete from `lead_search_words` where `customer_id` in (?, …) and `lead_id` = ?')).to.deep.equal([])
    expect(tables('select * from `leads` where `id` = ?')).to.deep.equal(['leads'])
    expect(tables('delete from `deliveries` where `id` = ?')).to.deep.equal(['deliveries'])
  })

  it('does not take the key column in a SET clause or a select list for a predicate', function () {
    expect(tables('update `leads` set `customer_id` = ? where `id` = ?')).to.deep.equal(['leads'])
    expect(tables('select `customer_id` = ? as same from `leads` where `id` = ?')).to.deep.equal(['leads'])
  })

  it('wants the key column in an INSERT\u2019s column list', function () {
    expect(tables('insert into `events` (`id`, `customer_id`, `type`) values (?, ?, ?)')).to.deep.equal([])
    expect(tables('insert into `events` (`id`, `type`) values (?, ?)')).to.deep.equal(['events'])
    expect(tables('insert into `delivery_attempts` (`id`, `delivery_id`) values (?, ?)')).to.deep.equal([])
  })

  it('reads customers by id, and every joined table by its own alias', function () {
    expect(tables('select * from `customers` where `id` = ?')).to.deep.equal([])
    expect(tables('select * from `customers`')).to.deep.equal(['customers'])
    expect(tables('select d.id from deliveries d join events e on e.id = d.event_id and e.customer_id = d.customer_id where d.customer_id = ?')).to.deep.equal(
      [],
    )
    expect(tables('select d.id from deliveries d join events e on e.id = d.event_id where d.customer_id = ?')).to.deep.equal(['events'])
    // Two keys joined pin both only when a value pins one of them.
    expect(
      tables(
        'select * from deliveries left join events on events.id = deliveries.event_id and events.customer_id = deliveries.customer_id where deliveries.updated_at >= ?',
      ),
    ).to.deep.equal(['deliveries', 'events'])
    expect(tables('select * from customers join leads on leads.customer_id = customers.id where customers.id = ?')).to.deep.equal([])
    // Unqualified, the key column of a join belongs to no table in particular.
    expect(tables('select * from deliveries join events on events.id = deliveries.event_id where customer_id = ?')).to.deep.equal(['deliveries', 'events'])
  })

  it('reads each subquery and each member of a UNION as a query of its own', function () {
    expect(
      tables('select * from leads where customer_id = ? and id in (select lead_id from lead_search_words where customer_id = ? and word = ?)'),
    ).to.deep.equal([])
    expect(tables('select * from leads where customer_id = ? and id in (select lead_id from lead_search_words where word = ?)')).to.deep.equal([
      'lead_search_words',
    ])
    // A correlated subquery is pinned by its key equal to the enclosing query's, not by another column.
    expect(
      tables(
        'select * from leads where customer_id = ? and (select 1 from lead_search_words p where p.customer_id = leads.customer_id and p.word = ?) is not null',
      ),
    ).to.deep.equal([])
    expect(
      tables('select * from leads where customer_id = ? and (select 1 from lead_search_words p where p.lead_id = leads.id and p.word = ?) is not null'),
    ).to.deep.equal(['lead_search_words'])
    expect(tables('(select * from leads where customer_id = ? and email = ?) UNION ALL (select * from leads where phone = ?)')).to.deep.equal(['leads'])
  })

  it('folds the shapes of one statement into one text', function () {
    expect(normalizeSql('INSERT INTO t (a, b) VALUES (?, ?), (?, ?),\n  (?, ?)')).to.equal('INSERT INTO t (a, b) VALUES (?, ?), …')
    expect(normalizeSql('select * from t where id in (?, ?, ?) and x in (?)')).to.equal('select * from t where id in (?, …) and x in (?)')
  })
})
