import { assertNever } from '../../../shared/statuses.ts';
import { levelLabel, stateSentence } from '../labels.ts';
import type { LiveNews } from '../live-news.ts';
import { RaceNotice } from './OutcomeBanner.tsx';

interface LiveChangeNoticeProps {
  news: LiveNews;
  /** The application clock now, for "at 14:02". */
  appNowMs: number;
  onRefresh: () => void;
}

/** The item moved while the page was open: what happened, said at once, in place of the decision it no longer allows. */
export function LiveChangeNotice({ news, appNowMs, onRefresh }: LiveChangeNoticeProps) {
  switch (news.kind) {
    case 'checking':
      return (
        <div className="notice notice-warning live-change" role="status" data-news={news.kind}>
          <p>
            <strong>This item changed while you were looking.</strong> Reading what it is now…
          </p>
        </div>
      );
    case 'decided':
      return (
        <div className="notice notice-warning live-change" role="alert" data-news={news.kind}>
          <div>
            <RaceNotice decided={news.decided} appNowMs={appNowMs} />
            <p>
              Nothing was sent from this page. {stateSentence(news.state, news.outcome)}
            </p>
          </div>
        </div>
      );
    case 'finished':
      return (
        <div className="notice notice-warning live-change" role="alert" data-news={news.kind}>
          <p>
            <strong>This item left your inbox while you were looking.</strong> {stateSentence(news.state, news.outcome)}
          </p>
        </div>
      );
    case 'moved':
      return (
        <div className="notice notice-warning live-change" role="alert" data-news={news.kind}>
          <p>
            <strong>
              It moved up to {news.group} ({levelLabel(news.level)}) while you were looking.
            </strong>{' '}
            Only its members can decide it now; nothing was sent from this page.
          </p>
        </div>
      );
    case 'reshown':
      return (
        <div className="notice notice-info live-change" role="status" data-news={news.kind}>
          <p>
            <strong>The facts changed while you were looking.</strong> This is the item on the facts now
            {news.repairs > 0 ? ', with the repair offered for them.' : news.stillFits ? ': the same refund still fits, and can be approved on them.' : '.'} Nothing
            was sent from this page.
          </p>
        </div>
      );
    case 'unread':
      return (
        <div className="notice notice-warning live-change" role="alert" data-news={news.kind}>
          <p>
            <strong>This item changed while you were looking,</strong> and could not be read again: {news.message}
          </p>
          <button type="button" className="button small" onClick={onRefresh}>
            Show the current state
          </button>
        </div>
      );
    default:
      return assertNever(news);
  }
}
