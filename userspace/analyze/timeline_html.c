// SPDX-License-Identifier: MIT
/* The timeline section of the HTML report: the bucketed data as inline JSON and a small script
 * that draws it on one <canvas> — a box per run of equal cells, never one per span — and says
 * what it drew in window.tracerTimeline (lanes, boxes, state segments, arrows), which the
 * browser test reads back. Nothing is loaded from the network. */
#include "analyze/report_html.h"
#include "analyze/timeline_html.h"
#include "util/util.h"

#include <inttypes.h>
#include <stdlib.h>

/* A cell or state as one character: index into this (0 = empty). */
static const char cell_chars[] = ".123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/* A JSON string that is also safe inside <script>: no '<', '>' or '&' raw. */
static void put_json_str(FILE *f, const char *text)
{
	char *safe = text_safe_dup(text);

	fputc('"', f);
	for (const unsigned char *s = (const unsigned char *)safe; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s < 0x20 || *s == '<' || *s == '>' || *s == '&')
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
	free(safe);
}

static void put_cells(FILE *f, const uint8_t *v)
{
	fputc('"', f);
	for (int c = 0; c < TL_COLS; c++)
		fputc(v[c] < sizeof(cell_chars) - 1 ? cell_chars[v[c]] : '.', f);
	fputc('"', f);
}

static void write_data(FILE *f, const struct timeline *tl)
{
	fprintf(f, "<script id=\"tl-data\" type=\"application/json\">{\"start_ns\":%" PRId64
		   ",\"dur_ns\":%" PRId64 ",\"cols\":%d,\"chosen\":%s,\"states\":%s,\"busiest\":",
		tl->w.start, tl->w.dur, TL_COLS, tl->chosen ? "true" : "false",
		tl->has_sched ? "true" : "false");
	put_json_str(f, tl->busiest);
	fputs(",\"cats\":[", f);
	for (int k = 0; k < CAT_MAX; k++) {
		fputs(k ? "," : "", f);
		put_json_str(f, category__name(k));
	}
	fputs("],\n\"lanes\":[", f);
	for (size_t i = 0; i < tl->nlanes; i++) {
		const struct tl_lane *l = &tl->lanes[i];

		fprintf(f, "%s\n{\"tid\":%" PRId64 ",\"pid\":%" PRId64 ",\"spans\":%" PRIu64
			   ",\"name\":",
			i ? "," : "", l->tid, l->pid, l->spans);
		put_json_str(f, l->name);
		fputs(",\"stage\":", f);
		put_json_str(f, l->stage);
		fputs(",\"rows\":[", f);
		for (int d = 0; d < l->depth; d++) {
			fputs(d ? "," : "", f);
			put_cells(f, l->rows[d]);
		}
		fputs("]", f);
		if (tl->has_sched) {
			fputs(",\"states\":", f);
			put_cells(f, l->states);
		}
		fputs("}", f);
	}
	fputs("],\n\"flows\":[", f);
	for (size_t i = 0; i < tl->nflows; i++) {
		const struct tl_flow *w = &tl->flows[i];

		fprintf(f, "%s[%d,%d,%" PRId64 ",%" PRId64 ",%u]", i ? "," : "", w->a, w->b, w->from,
			w->to, w->count);
	}
	fputs("],\n\"counters\":[", f);
	for (size_t i = 0; i < tl->ncounters; i++) {
		const struct tl_counter *c = &tl->counters[i];

		fputs(i ? ",\n{\"name\":" : "{\"name\":", f);
		put_json_str(f, c->name);
		fprintf(f, ",\"pid\":%" PRId64 ",\"top\":%.6g,\"max\":[", c->pid, c->top);
		for (int k = 0; k < TL_COLS; k++)
			if (c->set[k])
				fprintf(f, "%s%.6g", k ? "," : "", c->max[k]);
			else
				fputs(k ? ",null" : "null", f);
		fputs("]}", f);
	}
	fprintf(f, "],\n\"arrows_hidden\":%s,", tl->nflows > TL_FLOWS_SHOWN ? "true" : "false");
	fprintf(f, "\"other_threads\":%zu,\"other_counters\":%zu,\"wakeups\":%" PRIu64
		   ",\"flows_dropped\":%" PRIu64 ",\"spans_dropped\":%" PRIu64 "}</script>\n",
		tl->other_threads, tl->other_counters, tl->wakeups, tl->flows_dropped,
		tl->spans_dropped);
}

/* Draws the data; every count in window.tracerTimeline is of things drawn. */
static const char script[] =
	"<script>(function(){\n"
	"const D=JSON.parse(document.getElementById('tl-data').textContent);\n"
	"const N=D.lanes.length,ROW=N>100?5:N>30?7:10,ST=ROW-1,GAP=N>100?3:5;\n"
	"const CH='.123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ',L=210,C=D.cols,SH=16,CT=30,AX=18;\n"
	"const CAT={decode:'#7e57c2',operator:'#00897b',queue:'#64b5f6',io:'#8d6e63',"
	"other:'#90a4ae',gil:'#ef6c00',python:'#3949ab',encode:'#d81b60'};\n"
	"const STC=[null,'#2e7d32','#f9a825','#cfd8dc','#c62828','#1565c0'],"
	"STN=['','running','runnable','sleeping','blocked','in a queue span'];\n"
	"const ALPHA=[0.35,0.55,0.8,1];\n"
	"const cv=document.getElementById('tl-canvas'),g=cv.getContext('2d');\n"
	"let y=AX+D.counters.length*CT,prev=null;const pos=[];\n"
	"for(const l of D.lanes){if(l.stage!==prev){y+=SH;prev=l.stage;}"
	"const rows=Math.max(1,l.rows.length);pos.push({y:y,h:rows*ROW+(D.states?ST:0)});"
	"y+=rows*ROW+(D.states?ST:0)+GAP;}\n"
	"const fc=document.getElementById('tl-flows'),fg=fc.getContext('2d');\n"
	"cv.width=fc.width=L+C+10;cv.height=fc.height=y+4;\n"
	"g.fillStyle='#fff';g.fillRect(0,0,cv.width,cv.height);g.font='11px system-ui,sans-serif';\n"
	"function ns(t){return t>=1e9?(t/1e9).toFixed(3)+' s':t>=1e6?(t/1e6).toFixed(2)+' ms':"
	"(t/1e3).toFixed(1)+' us';}\n"
	"function runs(s,fn){let n=0;for(let i=0;i<s.length;){let j=i;while(j<s.length&&s[j]===s[i])"
	"j++;if(s[i]!=='.'){fn(CH.indexOf(s[i]),i,j-i);n++;}i=j;}return n;}\n"
	"g.fillStyle='#1d2327';g.strokeStyle='#9aa5ad';\n"
	"for(let k=0;k<=10;k++){const x=L+k*C/10;g.beginPath();g.moveTo(x+.5,AX-4);"
	"g.lineTo(x+.5,cv.height);g.globalAlpha=k%5?0.25:0.6;g.stroke();g.globalAlpha=1;"
	"g.textAlign=k==10?'right':k?'center':'left';g.fillText(ns(D.start_ns+D.dur_ns*k/10),x,AX-6);}\n"
	"g.textAlign='left';\n"
	"const S={lanes:[],arrows:0,counters:[],width:cv.width,height:cv.height};\n"
	"D.counters.forEach((c,i)=>{const y0=AX+i*CT,h=CT-8;let cols=0;g.fillStyle='#1d2327';"
	"g.fillText(c.name.slice(0,30),2,y0+10);g.fillStyle='#6d4c41';"
	"c.max.forEach((v,k)=>{if(v===null)return;cols++;const bh=c.top>0?Math.max(1,v/c.top*h):1;"
	"g.fillRect(L+k,y0+h-bh,1,bh);});g.fillStyle='#58636b';"
	"g.fillText('max '+c.top,10,y0+21);S.counters.push({name:c.name,columns:cols});});\n"
	"prev=null;\n"
	"D.lanes.forEach((l,i)=>{const p=pos[i];if(l.stage!==prev){prev=l.stage;"
	"g.fillStyle='#1d2327';g.font='bold 12px system-ui,sans-serif';"
	"g.fillText(l.stage||'(no stage)',2,p.y-4);g.font='11px system-ui,sans-serif';}\n"
	" g.fillStyle='#37474f';g.fillText((l.name+' '+l.tid).slice(0,32),10,p.y+Math.min(p.h,12)-2);\n"
	" let boxes=0,segs=0;\n"
	" l.rows.forEach((r,d)=>{boxes+=runs(r,(v,x,w)=>{const k=Math.floor((v-1)/4);"
	"g.globalAlpha=ALPHA[(v-1)%4];g.fillStyle=CAT[D.cats[k]]||'#90a4ae';"
	"g.fillRect(L+x,p.y+d*ROW,w,ROW-1);});});g.globalAlpha=1;\n"
	" if(D.states){const sy=p.y+Math.max(1,l.rows.length)*ROW;segs=runs(l.states,(v,x,w)=>{"
	"g.fillStyle=STC[v];g.fillRect(L+x,sy,w,ST-1);});}\n"
	" S.lanes.push({tid:l.tid,name:l.name,stage:l.stage,depth:l.rows.length,spanBoxes:boxes,"
	"stateSegments:segs,arrowsOut:0,arrowsIn:0,y:p.y,rowHeight:ROW,stateY:D.states?"
	"p.y+Math.max(1,l.rows.length)*ROW:null});});\n"
	"function xof(t){return L+Math.min(C-1,Math.max(0,Math.floor((t-D.start_ns)*C/D.dur_ns)))+.5;}\n"
	"fg.strokeStyle='#d81b60';fg.fillStyle='#d81b60';fg.lineWidth=1;\n"
	"const FA=D.flows.length>300?0.3:0.7;\n"
	"for(const f of D.flows){const a=pos[f[0]],b=pos[f[1]];if(!a||!b)continue;"
	"const x1=xof(f[2]),x2=xof(f[3]),y1=a.y+a.h-ST/2,y2=b.y+b.h-ST/2;"
	"fg.globalAlpha=f[4]>1?Math.min(1,FA+0.2):FA;fg.beginPath();fg.moveTo(x1,y1);fg.lineTo(x2,y2);"
	"fg.stroke();const an=Math.atan2(y2-y1,x2-x1);fg.beginPath();fg.moveTo(x2,y2);"
	"fg.lineTo(x2-6*Math.cos(an-0.4),y2-6*Math.sin(an-0.4));"
	"fg.lineTo(x2-6*Math.cos(an+0.4),y2-6*Math.sin(an+0.4));fg.fill();"
	"S.arrows++;S.lanes[f[0]].arrowsOut++;S.lanes[f[1]].arrowsIn++;}\n"
	"const box=document.getElementById('tl-show-flows');\n"
	"box.addEventListener('change',e=>{fc.style.display=box.checked?'':'none';"
	"S.arrowsVisible=box.checked;});\n"
	"box.checked=!D.arrows_hidden;fc.style.display=box.checked?'':'none';"
	"S.arrowsVisible=box.checked;\n"
	"const tip=document.getElementById('tl-tip');\n"
	"cv.addEventListener('mousemove',e=>{const r=cv.getBoundingClientRect(),x=e.clientX-r.left,"
	"yy=e.clientY-r.top,col=Math.floor(x-L);let t='';\n"
	" D.lanes.forEach((l,i)=>{const p=pos[i];if(yy<p.y||yy>=p.y+p.h)return;t=l.name+' ('+l.tid+')';"
	"if(col<0||col>=C)return;t+=' at '+ns(D.start_ns+D.dur_ns*col/C);const d=Math.floor((yy-p.y)/ROW);"
	"if(d<l.rows.length){const v=CH.indexOf(l.rows[d][col]);"
	"t+=v>0?': '+D.cats[Math.floor((v-1)/4)]+' span (depth '+d+')':': no span';}"
	"else if(D.states){t+=': '+(STN[CH.indexOf(l.states[col])]||'unknown');}});\n"
	" tip.textContent=t||'\\u00a0';});\n"
	"window.tracerTimeline=S;cv.dataset.lanes=S.lanes.length;cv.dataset.arrows=S.arrows;\n"
	"})();</script>\n";

void timeline_html__write(FILE *f, const struct timeline *tl, int64_t rec_start, int64_t rec_end)
{
	static const char *const cat_colors[CAT_MAX] = { "#7e57c2", "#00897b", "#64b5f6", "#8d6e63",
							 "#90a4ae", "#ef6c00", "#3949ab", "#d81b60" };
	static const char *const st_colors[] = { "#2e7d32", "#f9a825", "#cfd8dc", "#c62828",
						 "#1565c0" };
	static const char *const st_names[] = { "running", "runnable", "sleeping", "blocked",
						"in a queue span" };
	char a[32], b[32], c[32];

	fputs("<h2 id=\"timeline\">Timeline</h2>\n<p class=\"note\" id=\"tl-window\">", f);
	fprintf(f, "Window: %s from %s", fmt_duration(tl->w.dur, a, sizeof(a)),
		fmt_duration(tl->w.start > 0 ? tl->w.start : 0, b, sizeof(b)));
	/* as microseconds with three decimals, the file's own unit (a trace may start below 0) */
	fprintf(f, " (<code>--window %s%" PRId64 ".%03d,%" PRId64 ".%03d</code>) of %s recorded, "
		   "in %d columns. ",
		tl->w.start < 0 ? "-" : "", (int64_t)llabs(tl->w.start) / 1000,
		(int)(llabs(tl->w.start) % 1000), tl->w.dur / 1000, (int)(tl->w.dur % 1000),
		fmt_duration(rec_end > rec_start ? rec_end - rec_start : 0, c, sizeof(c)), TL_COLS);
	if (tl->chosen) {
		fprintf(f, "Chosen where the busiest stage (");
		report_html__esc(f, tl->busiest[0] ? tl->busiest : "none");
		fprintf(f, ") works most (in spans other than queue waits), about %d spans per "
			   "thread; <code>--window START,DUR</code> "
			   "picks another. ",
			TL_SPANS_PER_LANE);
	}
	fputs("Each thread is a lane: its spans nested by depth, coloured by category (the "
	      "category with the most time in each pixel column; paler where spans fill less of "
	      "it)",
	      f);
	if (tl->has_sched)
		fputs(", then a strip of its scheduler state (the one with the most time)", f);
	fputs(". Arrows are wake-ups from the waker to the woken thread.", f);
	if (tl->other_threads)
		fprintf(f, " %zu other threads (the least busy) are not drawn.", tl->other_threads);
	if (tl->spans_dropped)
		fprintf(f, " The window holds more than %" PRIu64 " spans: %" PRIu64 " shorter than "
			   "a column are not drawn (a shorter --window draws them).",
			tl->max_spans, tl->spans_dropped);
	if (tl->flows_dropped)
		fprintf(f, " %" PRIu64 " wake-ups past %d arrows are not drawn.", tl->flows_dropped,
			TL_MAX_FLOWS);
	if (tl->other_counters)
		fprintf(f, " %zu other counter tracks are not drawn.", tl->other_counters);
	fputs("</p>\n<p class=\"legend\">", f);
	for (int k = 0; k < CAT_MAX; k++)
		fprintf(f, "<span><i style=\"background:%s\"></i>%s</span>", cat_colors[k],
			category__name(k));
	fputs("</p>\n", f);
	if (tl->has_sched) {
		fputs("<p class=\"legend\">", f);
		for (int k = 0; k < TS_MAX - 1; k++)
			fprintf(f, "<span><i style=\"background:%s\"></i>%s</span>", st_colors[k],
				st_names[k]);
		fputs("<span><i style=\"background:#d81b60\"></i>wake-up</span></p>\n", f);
	}
	fprintf(f, "<p class=\"note\"><label><input type=\"checkbox\" id=\"tl-show-flows\" "
		   "checked> %zu wake-up arrows%s</label> &nbsp; <span id=\"tl-tip\">&nbsp;</span>"
		   "</p>\n",
		tl->nflows,
		tl->nflows > TL_FLOWS_SHOWN ? " (hidden at first: so many cover the lanes)" : "");
	fputs("<div style=\"overflow-x:auto;position:relative\">"
	      "<canvas id=\"tl-canvas\" width=\"1210\" height=\"100\" role=\"img\" "
	      "aria-label=\"timeline: a lane per thread, its spans by depth and its states\">"
	      "</canvas>"
	      "<canvas id=\"tl-flows\" width=\"1210\" height=\"100\" style=\"position:absolute;"
	      "left:0;top:0;pointer-events:none\"></canvas></div>\n",
	      f);
	write_data(f, tl);
	fputs(script, f);
}
