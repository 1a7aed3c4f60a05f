"""Words that name the same thing in Korean and English: a question in one language finds a
note written in the other (메모리 누수 finds "memory leak", `cache` finds 캐시의 TTL).

Korean writes most of a developer's vocabulary as loanwords (캐시, 서버, 스테이징) or has
its own word beside the English one (배포 and deploy); the author writes both. Each group
below (between bars, or a line) is one meaning; a query's word that is one of them also
looks for the others, and counts as the best of them (never twice). Only words whose
meaning holds in any developer's notes belong here: translations and spellings, not looser
synonyms.
"""

from __future__ import annotations

from functools import lru_cache

_GROUPS = """
deploy 배포 | release 릴리스 릴리즈 출시 | backup 백업 | restore 복구 복원
database 데이터베이스 db 디비 | server 서버 | cache 캐시 | memory 메모리 | leak 누수
connection 연결 커넥션 접속 | pool 커넥션풀 | test 테스트 | flaky 플래키 | schedule 일정 스케줄
reminder 알림 리마인더 | notification 알림 통지 | lease 리스 | token 토큰
password 비밀번호 패스워드 암호 | secret 시크릿 비밀 | login 로그인 | logout 로그아웃
auth authentication 인증 | permission 권한 | account 계정 | user 사용자 유저 | customer 고객
payment 결제 | invoice 인보이스 청구서 송장 | billing 청구 과금 빌링 | subscription 구독
refund 환불 | price 가격 요금 | cost 비용 | fee 수수료 | tax 세금 | error 에러 오류 | bug 버그
fix 수정 | incident 장애 사고 인시던트 | outage 장애 중단 | crash 크래시 충돌
timeout 타임아웃 시간초과 | retry 재시도 | log 로그 | monitoring 모니터링 | alert 경보 알람 얼럿
metric 지표 메트릭 | dashboard 대시보드 | report 보고서 리포트 | migration 마이그레이션 이전
upgrade 업그레이드 | update 업데이트 | version 버전 | config 설정 구성 | setting 설정
environment 환경 | staging 스테이징 | production 운영 프로덕션 | development 개발 | build 빌드
pipeline 파이프라인 | commit 커밋 | branch 브랜치 | merge 병합 머지 | review 리뷰 검토
query 쿼리 질의 | index 인덱스 색인 | table 테이블 | column 컬럼 | schema 스키마 | search 검색
queue 큐 대기열 | worker 워커 | job 작업 | task 작업 태스크 | thread 스레드 | process 프로세스
container 컨테이너 | image 이미지 | network 네트워크 | port 포트 | domain 도메인
certificate 인증서 | disk 디스크 | storage 저장소 스토리지 | file 파일
folder 폴더 디렉터리 directory | machine 머신 장비 | laptop 노트북 랩톱 | phone 휴대폰 전화
email 이메일 메일 | message 메시지 문자 | sms 문자 | meeting 회의 미팅 | standup 스탠드업
holiday 휴일 공휴일 | vacation 휴가 | sick 병가 | night 밤 야간 | morning 아침 오전
evening 저녁 | weekend 주말 | monday 월요일 | tuesday 화요일 | wednesday 수요일
thursday 목요일 | friday 금요일 | saturday 토요일 | sunday 일요일 | hour 시간 | time 시간
date 날짜 | deadline 마감 | plan 계획 | decision 결정 | rule 규칙 | policy 정책 | document 문서
documentation 문서 | blog 블로그 | post 포스트 | draft 초안 | note 메모 노트 | handoff 인계
next 다음 | speed 속도 | slow 느린 느려 | fast 빠른 | performance 성능 | load 부하
traffic 트래픽 | security 보안 | vulnerability 취약점 | encryption 암호화 | firewall 방화벽
vpn 브이피엔 | api 에이피아이 | client 클라이언트 고객사 | contract 계약 | clinic 병원 클리닉
patient 환자 | booking 예약 | appointment 예약 | cancel 취소 | doctor 의사 | hospital 병원
grafana 그라파나 | prometheus 프로메테우스 | postgres postgresql pg 포스트그레스 | redis 레디스
docker 도커 | kubernetes k8s 쿠버네티스 | github 깃허브 | python 파이썬
javascript 자바스크립트 | template 템플릿 | font 폰트 글꼴 | translation 번역 | language 언어
korean 한국어 | english 영어
"""


@lru_cache(maxsize=1)
def _index() -> dict[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """Each member's index terms → every member's terms (itself included)."""
    from ondeck.memory.recall_words import terms

    found: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for group in _GROUPS.replace("\n", "|").split("|"):
        members = []
        for word in group.split():
            held = tuple(dict.fromkeys(terms(word)))
            if held and held not in members:
                members.append(held)
        for member in members:
            found.setdefault(member, [])
            found[member] += [m for m in members if m not in found[member]]
    return {k: tuple(v) for k, v in found.items()}


def alternatives(held: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The other words of the groups a word of index terms `held` is in (none: not in any)."""
    return tuple(m for m in _index().get(held, ()) if m != held)
