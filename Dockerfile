# querygate for docker-compose: the built server and its production dependencies only.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
RUN npm ci --ignore-scripts
COPY src src
COPY pack pack
COPY queries queries
COPY reports reports
COPY migrations migrations
COPY tsconfig.build.json ./
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev --ignore-scripts

FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
USER node
ENTRYPOINT ["node", "--max-old-space-size=1024", "dist/src/cli.js"]
CMD ["serve", "--http", "--host", "0.0.0.0", "--port", "3000"]
